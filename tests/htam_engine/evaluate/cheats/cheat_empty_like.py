"""Cheat: the memory-reuse exploit. A no-op kernel runs, the output is torch.empty_like and
never written: where the reference ran first, its freed result is what comes back."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noop_kernel[(1,)](x, x.numel(), BLOCK=16)
        return torch.empty_like(x)
