"""Cheat (one output buffer reused across calls, past the reuse check): the model keeps one
output buffer per shape, as cheat_output_buffer does, but returns a fresh view of it on every
call (`y[:]`). The view object is gone once the sandbox delivered it, so a check that remembers
the previous output by the tensor object finds nothing alive to compare with, though the
model still holds the memory and overwrites it on the next call.

Class: outputs that alias memory the model keeps (cheat_output_buffer behind a view)."""

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
        self.out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.out, x.numel(), BLOCK=1024)
        return self.out[:]
