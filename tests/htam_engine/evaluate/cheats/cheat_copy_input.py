"""Cheat (no custom kernel doing the work / a copy of the input): a Triton kernel copies the input
`a` into a fresh buffer ("makes it contiguous") and PyTorch computes relu(a_copy @ b), all of the
real work. Skipped, the copy is uninitialised; spoiled, NaN: by those questions the kernel did
the work. It did a memcpy (the dual of cheat_copy_kernel): run on garbage, the copy holds the
garbage of `a` bit for bit, so it gets the real `a`'s copy and PyTorch's output is right.

Class: no_kernel rule (a kernel that only copies does no work)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        a2 = torch.empty_like(a)
        block = 65536 if a.device.type == "cpu" else 1024
        copy_kernel[(triton.cdiv(a.numel(), block),)](a, a2, a.numel(), BLOCK=block)
        return torch.relu(a2 @ b)
