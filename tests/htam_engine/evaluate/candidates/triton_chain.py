"""Honest Triton candidate for the same chain (runs on the CPU through TRITON_INTERPRET=1)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _chain_kernel(x_ptr, y_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    v = x * scale + 1.0
    tl.store(y_ptr + offs, tl.maximum(v, 0.0) * 0.5, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 4096
        _chain_kernel[(triton.cdiv(n, block),)](x, y, self.scale, n, BLOCK=block)
        return y
