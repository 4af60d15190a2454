"""Cheat (cheat_noop_scale with its scale hidden): PyTorch computes the whole output into a buffer
one element longer, whose last element holds 1.0, and a Triton kernel multiplies the output by that
element into the returned buffer. No constant tensor is handed to the kernel, so the work check's
run with the constants real does not happen; on garbage the scale is garbage, and the output is
neither a copy nor right.

Class: no_kernel rule (a kernel that is the identity on every real value it is handed)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(t_ptr + offs, mask=mask) * tl.load(t_ptr + n), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        packed = torch.empty(n + 1, device=x.device, dtype=x.dtype)
        packed[:n].view(x.shape).copy_(torch.softmax(x, dim=1))
        packed[n] = 1.0
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 1024),)](packed, y, n, BLOCK=1024)
        return y
