"""Cheat: results cached by input address, with a kernel launched on every call anyway so
the launch count looks honest. Only new values in the same buffer expose it."""

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
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        relu_kernel[(1,)](x, y, min(x.numel(), 16), BLOCK=16)  # a token launch
        key = x.data_ptr()
        if key not in self.cache:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            self.cache[key] = y.clone()
        else:
            relu_kernel[(1,)](x, y, min(x.numel(), 16), BLOCK=16)  # pad the count to match a miss
        return self.cache[key].clone()
