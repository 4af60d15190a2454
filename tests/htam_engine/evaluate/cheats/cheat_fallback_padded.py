"""Cheat: a decoy launch that always works, then a kernel that never does inside a try/except
falling back to PyTorch: a kernel ran on every call, PyTorch did the work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y



class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu_kernel[(1,)](x, torch.empty(16, device=x.device), 16, BLOCK=16)  # the decoy
        y = torch.empty_like(x)
        try:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, BLOCK=1024)  # missing argument: always raises
        except Exception:
            y = torch.relu(x)
        return y
