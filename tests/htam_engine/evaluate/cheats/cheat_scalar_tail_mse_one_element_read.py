"""Cheat (PyTorch does the work under a custom-kernel claim, through a one-element output), open:
cheat_scalar_tail_mse whose kernel is handed the predictions too and reads one element of them,
adding its difference from a copy PyTorch took of it: nothing on the real inputs, garbage where the
work check's garbage on the bulk (sequence.bulk_threshold) overwrote the predictions. The output
then depends on the bulk as an honest reduction's does, though on one element of it, and is wrong
on garbage as an honest one is.

Class: no_kernel rule (what the garbage on the bulk asks is whether a kernel reads the bulk, not how
much of it its output depends on)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(p_ptr, first_ptr, s_ptr, out_ptr, inv_n):
    tl.store(out_ptr, tl.load(s_ptr) * inv_n + (tl.load(p_ptr) - tl.load(first_ptr)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p = predictions.contiguous()
        first = p.reshape(-1)[:1].clone()  # the one element the kernel reads, as it is now
        d = p - targets
        s = d.mul_(d).sum().reshape(1)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        scale_kernel[(1,)](p, first, s, out, 1.0 / d.numel())
        return out
