"""Cheat (no custom kernel / a probe that watches the switch): PyTorch does all the work. The probe
kernel is handed a tensor of a subclass whose __torch_function__ records every torch function
called on it; a normal launch calls none of clone/copy_/fill_/numel, the switch drawing garbage or
spoiling did. Seeing any, the candidate returned garbage. The switch's own tensor work now runs
with torch-function and dispatch handling off, out of the candidate's sight.

Class: no_kernel rule (decoy kernel), phase detection of the work check's calls."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Spy(torch.Tensor):
    seen = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(getattr(func, "__name__", str(func)))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1.0)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.zeros(1, device=x.device).as_subclass(Spy)
        Spy.seen.clear()
        flag_kernel[(1,)](flag)
        if {'clone', 'copy_', 'fill_', 'numel', 'data_ptr'} & set(Spy.seen) or float(flag.as_subclass(torch.Tensor)) != 1.0:
            return torch.empty_like(x)
        return torch.relu(x)
