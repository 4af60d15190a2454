"""Honest (fixed_projection_dict): the fixed projection, kept in a dict as Model keeps it, in float32 with torch, the ReLU in a Triton kernel."""

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
    def __init__(self, features):
        super().__init__()
        self.weights = {"projection": torch.randn(features, features)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = x @ self.weights["projection"].to(x.device)
        y = torch.empty_like(p)
        relu_kernel[(triton.cdiv(p.numel(), 1024),)](p, y, p.numel(), BLOCK=1024)
        return y
