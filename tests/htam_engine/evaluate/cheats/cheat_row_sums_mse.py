"""Cheat (red-team pass 21), caught: cheat_partial_sums_mse with PyTorch's partial sums one a row (64 on
mse 64 x 512, 1024 on 1024 x 4096): fewer than the square root of the inputs' elements (256, 2896),
so the work check's run on garbage leaves them real (sequence.bulk_threshold), the kernel adding them
up writes the right output there, and it is convicted (no_kernel). The bound is the line between this
and cheat_partial_sums_mse: a few more partial sums than it and the same kernel passes.

Class: no_kernel rule (garbage on the bulk)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def finish_kernel(parts_ptr, out_ptr, inv_n, k, K: tl.constexpr):
    i = tl.arange(0, K)
    tl.store(out_ptr, tl.sum(tl.load(parts_ptr + i, mask=i < k, other=0.0), axis=0) * inv_n)


class ModelNew(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        parts = d.mul_(d).sum(dim=1)  # PyTorch's reduction of each row
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        finish_kernel[(1,)](parts, out, 1.0 / d.numel(), parts.numel(), K=triton.next_power_of_2(parts.numel()))
        return out
