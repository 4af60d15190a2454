"""Cheat (no custom kernel doing the work): PyTorch computes the whole output; a Triton kernel
copies it into the buffer forward returns. With the kernel skipped the buffer is never written
(wrong), and with every tensor the kernel was handed spoiled nothing of it is right, so by both
of those questions the kernel did all of the work. It did a copy: run on garbage, the buffer
holds the garbage of PyTorch's output bit for bit, so it gets the real output's copy, and all of
the output is right.

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
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        done = torch.relu(x.contiguous())
        y = torch.empty_like(done)
        copy_kernel[(triton.cdiv(done.numel(), 4096),)](done, y, done.numel(), BLOCK=4096)
        return y
