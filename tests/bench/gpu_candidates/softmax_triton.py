"""Triton candidate for builtin:softmax — one program per row, the whole row in registers."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, dim, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x = tl.load(x_ptr + row * dim + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    e = tl.where(mask, e, 0.0)
    tl.store(y_ptr + row * dim + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        dim = x.shape[-1]
        rows = x.numel() // dim if dim else 0
        if rows:
            block = triton.next_power_of_2(dim)
            warps = 8 if block >= 2048 else 4
            _softmax_kernel[(rows,)](x, y, dim, BLOCK=block, num_warps=warps)
        return y
