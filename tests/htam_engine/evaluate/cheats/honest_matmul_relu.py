"""Honest (and slow): the product with torch, the ReLU of its last row in a Triton kernel; the
baseline the prefetch cheats are measured against."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        p = a @ b
        y = torch.empty_like(p)
        y[:-1] = torch.relu(p[:-1])
        relu_kernel[(1,)](p[-1], y[-1], p.shape[1], BLOCK=triton.next_power_of_2(p.shape[1]))
        return y
