"""Honest: row max and argmax in one Triton program per row (a tuple of two outputs)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, v_ptr, i_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
    best = tl.max(x, axis=0)
    idx = tl.min(tl.where(x == best, offs, BLOCK), axis=0)
    tl.store(v_ptr + row, best)
    tl.store(i_ptr + row, idx.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        rows, cols = x.shape
        values = torch.empty(rows, dtype=x.dtype, device=x.device)
        indices = torch.empty(rows, dtype=torch.int64, device=x.device)
        rowmax_kernel[(rows,)](x, values, indices, cols, BLOCK=triton.next_power_of_2(cols))
        return values, indices
