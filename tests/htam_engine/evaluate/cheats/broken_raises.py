"""Broken: forward raises after its kernel ran."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noop_kernel[(1,)](x, x.numel(), BLOCK=16)
        raise ValueError("index 7 is out of bounds")
