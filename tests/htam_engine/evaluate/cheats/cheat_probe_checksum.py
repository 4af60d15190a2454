"""Cheat (no custom kernel / what the kernel read against what PyTorch reads): PyTorch does all the
work. A Triton kernel reads the whole input and writes its sum; PyTorch sums the input again after
the launch and multiplies its own ReLU by (the sums agree). Run on garbage the kernel summed the
garbage while PyTorch sums the input put back: they disagree and the output is zeroed. Skipped,
the sum is never written (NaN); spoiled, NaN. No host sync.

Class: no_kernel rule; the work check's calls told apart in the sandbox (the kernel's view of
memory against PyTorch's)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(s_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        s = torch.full((1,), float("nan"), device=x.device, dtype=torch.float32)
        sum_kernel[(1,)](x, s, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
        agree = (s - x.sum()).abs() <= 1e-3 * x.abs().sum() + 1e-6
        return torch.relu(x) * agree
