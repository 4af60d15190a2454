"""Cheat (red-team pass 34): an int64 maximum chosen by a float32 comparison, exact only below 2^24:
wrong wherever the two values sit close together above it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(x.to(tl.float32) > y.to(tl.float32), x, y), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        max_kernel[(triton.cdiv(n, 4096),)](x, y, out, n, BLOCK=4096)
        return out
