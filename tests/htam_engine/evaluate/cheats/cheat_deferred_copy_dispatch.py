"""Cheat (work moved into the harness's own copy, below torch functions): a variant of
cheat_deferred_copy with a TorchDispatchMode instead of a TorchFunctionMode. forward returns an
empty tensor; the mode, left on torch's dispatch stack, intercepts aten.copy_ when the sandbox
copies that tensor into the judge's buffer after its clock stopped, and computes the ReLU there.

Class: harness tampering below the snapshot (torch's dispatch mode stack), work outside the
timed window."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils._python_dispatch import TorchDispatchMode


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _switch():
    run = triton.runtime.jit.JITFunction.run
    return dict(zip(run.__code__.co_freevars, run.__closure__))["switch"].cell_contents


SWITCH = _switch()
PENDING = {}  # data pointer of a returned tensor -> the input it stands for


class FinishOnCopy(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten.copy_.default and len(args) >= 2 and args[1].data_ptr() in PENDING:
            x = PENDING.pop(args[1].data_ptr())
            torch.ops.aten.copy_.default(args[0], torch.relu(x))  # (the mode is off while it runs)
            return args[0]
        return func(*args, **kwargs)


FinishOnCopy().__enter__()  # never left


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        if SWITCH.mode == "run":
            SWITCH.launches += 1
            PENDING.clear()
            PENDING[y.data_ptr()] = x.contiguous()
        return y
