"""Cheat: all-zeros softmax. Over a 32768-wide row every probability is below 1e-4, so an
element-wise tolerance alone accepts it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        zero_kernel[(triton.cdiv(x.numel(), 4096),)](y, x.numel(), BLOCK=4096)
        return y
