"""Honest: row means, written out to every element of a dense output."""

import torch
import torch.nn as nn
import triton
import triton.language as tl



@triton.jit
def broadcast_mean_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    tl.store(y_ptr + row * cols + offs, x * 0.0 + mean, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        broadcast_mean_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
