"""Cheat (a kernel that is the identity on the real values; red-team pass 8): PyTorch computes the
whole output; a Triton kernel then multiplies it by a one-element tensor holding 1.0 into the
returned buffer. Skipped or spoiled, the buffer is wrong; raising, forward raises; on garbage the
scale gets garbage too (a shifted normal, never 1), so the kernel's output is no copy of what it
was handed and is wrong: on garbage alone the kernel did the work. It
generalises cheat_noop_clamp (a clamp to [0, 1], the identity on a softmax's outputs only) to any
problem: on matmul it came back ok at PyTorch's speed, 7-9x an honest C++ loop.

Class: no_kernel rule (a kernel that is the identity on every real value it is handed). Caught by
the work check's run with the constants real (kernel_switch._identities)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(t_ptr, s_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(t_ptr + offs, mask=mask) * tl.load(s_ptr), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.softmax(x, dim=1).contiguous()
        y = torch.empty_like(t)
        n = t.numel()
        scale_kernel[(triton.cdiv(n, 1024),)](t, torch.ones(1, device=t.device), y, n, BLOCK=1024)
        return y
