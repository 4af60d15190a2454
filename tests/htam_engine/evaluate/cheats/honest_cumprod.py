"""Honest: cumulative product along dim 1, one Triton program per row, blocks carried."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def cumprod_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 1.0
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=mask, other=1.0)
        p = tl.associative_scan(x, 0, _mul) * carry
        tl.store(y_ptr + row * cols + offs, p, mask=mask)
        carry = carry * tl.reduce(x, 0, _mul)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        cumprod_kernel[(rows,)](x, y, cols, BLOCK=1024)
        return y
