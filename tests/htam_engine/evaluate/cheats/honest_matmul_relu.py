"""Honest (and slow): the product with torch, its ReLU in a Triton kernel; the
baseline the prefetch cheats are measured against."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        p = a @ b
        y = torch.empty_like(p)
        block = 65536 if p.device.type == "cpu" else 1024  # few programs through the CPU interpreter
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
