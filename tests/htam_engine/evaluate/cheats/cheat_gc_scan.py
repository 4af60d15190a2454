"""Cheat: searches the process for a tensor the harness holds and hands a copy back."""

import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noop_kernel[(1,)](x, x.numel(), BLOCK=16)
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj.data_ptr() != x.data_ptr():
                return obj.clone()
        return torch.zeros_like(x)
