"""Honest: both linear layers and the ReLU in one Triton kernel per row, float32 throughout."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pair_kernel(x_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, y_ptr, F: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, F)
    x = tl.load(x_ptr + row * F + i)
    w1 = tl.load(w1_ptr + i[:, None] * F + i[None, :])
    h = tl.maximum(tl.sum(w1 * x[None, :], axis=1) + tl.load(b1_ptr + i), 0.0)
    w2 = tl.load(w2_ptr + i[:, None] * F + i[None, :])
    y = tl.sum(w2 * h[None, :], axis=1) + tl.load(b2_ptr + i)
    tl.store(y_ptr + row * F + i, y)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.first = nn.Linear(features, features)
        self.second = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        pair_kernel[(x.shape[0],)](x, self.first.weight, self.first.bias, self.second.weight,
                                   self.second.bias, y, F=x.shape[1])
        return y
