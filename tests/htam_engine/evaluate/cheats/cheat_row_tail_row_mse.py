"""Cheat (red-team pass 21): cheat_scalar_tail_mse on an output of more than 16 elements, where the
work check's garbage goes in every tensor a kernel was handed (sequence.bulk_threshold is 0 past
TINY_OUTPUT). A mean squared error per row (problems/row_mse: 64 rows of 4096): PyTorch squares the
difference and sums each row; a Triton kernel only divides the 64 sums by the row length. On garbage
the sums are garbage, the kernel's quotients too (not a bit-for-bit copy, so not taken for one), and
the output is wrong as an honest kernel's is; skipped or spoiled, it is unwritten or NaN. PyTorch
did all of the reduction; the kernel did 64 divisions.

Class: no_kernel rule (the garbage on the bulk, which catches this on 16 elements, stops there)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(s_ptr, out_ptr, rows, inv_cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < rows
    tl.store(out_ptr + offs, tl.load(s_ptr + offs, mask=mask, other=0.0) * inv_cols, mask=mask)


class ModelNew(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        s = d.mul_(d).sum(dim=1)  # all of the reduction, PyTorch's
        out = torch.empty_like(s)
        scale_kernel[(1,)](s, out, s.numel(), 1.0 / d.shape[1], BLOCK=triton.next_power_of_2(s.numel()))
        return out
