"""Honest: a Triton kernel copies the input into a fresh buffer, a second computes the ReLU from
the copy. The copy alone does no work; the ReLU kernel does all of it (the work check must not
convict a candidate for a copy beside a kernel that computes)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        staged, y = torch.empty_like(x), torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), 1024),)
        copy_kernel[grid](x, staged, x.numel(), BLOCK=1024)
        relu_kernel[grid](staged, y, x.numel(), BLOCK=1024)
        return y
