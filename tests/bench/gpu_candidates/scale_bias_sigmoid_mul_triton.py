"""Triton candidate for builtin:scale_bias_sigmoid_mul — x * sigmoid(x * scale + bias) in one pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gate_kernel(x_ptr, s_ptr, b_ptr, y_ptr, n, features, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = offs % features
    x = tl.load(x_ptr + offs, mask=mask)
    z = x * tl.load(s_ptr + c, mask=mask) + tl.load(b_ptr + c, mask=mask)
    tl.store(y_ptr + offs, x * tl.sigmoid(z), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.2)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 2048
        _gate_kernel[(triton.cdiv(n, block),)](x, self.scale, self.bias, y, n, x.shape[-1], BLOCK=block)
        return y
