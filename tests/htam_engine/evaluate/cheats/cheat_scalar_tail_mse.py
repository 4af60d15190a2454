"""Cheat (PyTorch does the work under a custom-kernel claim, through a one-element output): a mean
squared error whose every term PyTorch computes, faster than the reference's three operators (the
difference, squared in place, then summed: one temporary of the inputs' size where the reference
makes two);
a Triton kernel only scales the one-element sum by 1/n into the output. The work check measures
what share of the output is still right: skipped, the output is unwritten; spoiled, the kernel's
sum is NaN; run on garbage, the kernel reads a garbage sum and writes garbage / n, not a bit-for-bit
copy of it (so not a "copy" either) -- every way, 0 % of a one-element output is right, as for an
honest reduction kernel. The share of a one-element output cannot tell a kernel that did the
reduction from one that did its last multiply.

Class: no_kernel rule (the work check's share of the output is all-or-nothing on a scalar output:
kernel_switch GARBAGE/SPOIL, sequence.check_kernels_did_the_work). Caught by the runs on garbage
putting garbage only in the bulk where the output is a reduction to a few elements
(sequence.bulk_threshold): the kernel then reads PyTorch's real sum and its output is right."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(s_ptr, out_ptr, inv_n):
    tl.store(out_ptr, tl.load(s_ptr) * inv_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        s = d.mul_(d).sum().reshape(1)  # the reference's summation, on one temporary
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        scale_kernel[(1,)](s, out, 1.0 / d.numel())
        return out
