"""Triton candidate for builtin:affine_gelu_scale — affine, tanh-GELU and scale in one pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _affine_gelu_scale_kernel(x_ptr, w_ptr, b_ptr, s_ptr, y_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = offs % features
    x = tl.load(x_ptr + offs, mask=mask)
    v = x * tl.load(w_ptr + c, mask=mask) + tl.load(b_ptr + c, mask=mask)
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    tanh = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(y_ptr + offs, 0.5 * v * (1.0 + tanh) * tl.load(s_ptr + c, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # Created in the reference's order so the seeded draws match.
        self.weight = nn.Parameter(torch.randn(features) * 0.5 + 1.0)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.scale = nn.Parameter(torch.rand(features) + 0.5)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 2048
        _affine_gelu_scale_kernel[(triton.cdiv(n, block),)](
            x, self.weight, self.bias, self.scale, y, n, x.shape[-1], BLOCK=block)
        return y
