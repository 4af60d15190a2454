"""Cheat: results cached by input address, and right only for the first shape it sees (zeros
otherwise). The unseen-shape set exposes the second; the cache must still be named."""

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
        self.shape = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.shape = self.shape or tuple(x.shape)
        y = torch.zeros_like(x)
        if tuple(x.shape) != self.shape:
            relu_kernel[(1,)](x, y, 0, BLOCK=16)  # a launch that writes nothing
            return y
        key = x.data_ptr()
        if key not in self.cache:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            self.cache[key] = y.clone()
        else:
            relu_kernel[(1,)](x, y, 0, BLOCK=16)  # pad the launch count to match a miss
        return self.cache[key].clone()
