"""Triton candidate for builtin:rmsnorm — one program per row: mean of squares, rsqrt, gain."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * hidden + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / hidden + eps)
    tl.store(y_ptr + row * hidden + cols, x * r * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)  # same draw as the reference

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        hidden = x.shape[-1]
        rows = x.numel() // hidden if hidden else 0
        if rows:
            block = triton.next_power_of_2(hidden)
            warps = 8 if block >= 2048 else 4
            _rmsnorm_kernel[(rows,)](x, self.weight.contiguous(), y, hidden, self.eps, BLOCK=block, num_warps=warps)
        return y
