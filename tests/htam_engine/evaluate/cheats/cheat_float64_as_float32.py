"""Cheat (lower precision where the judge has no precision rule): the problem computes in float64;
the kernel loads each value, computes in float32 and stores the result back as float64. The
output's dtype is right and every element is within float64's tolerance (atol = rtol = 1e-5),
since float32 is off by ~1e-7; but the output has float32's precision, not float64's, which on a
GPU is the whole point of the problem (float64 runs at a small fraction of float32's rate). The
judge measures precision against its float64 yardstick for float32, float16 and bfloat16
outputs only.

Class: lower precision (a dtype the precision rule does not cover)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, (x / (1.0 + tl.exp(-x))).to(tl.float64), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        silu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
