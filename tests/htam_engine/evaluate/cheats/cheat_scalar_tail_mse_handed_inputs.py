"""Cheat (PyTorch does the work under a custom-kernel claim, through a one-element output):
cheat_scalar_tail_mse, whose kernel is handed the inputs too and reads none of them, so that the
bytes it was handed are those of an honest MSE kernel. The work check's garbage on the bulk
(sequence.bulk_threshold) puts garbage in the inputs it was handed and keeps the one-element sum
real: the kernel's output is still right.

Class: no_kernel rule (what a kernel is handed is not what it uses: kernel_switch's "on the bulk")."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(p_ptr, t_ptr, s_ptr, out_ptr, inv_n):
    tl.store(out_ptr, tl.load(s_ptr) * inv_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        s = torch.nn.functional.mse_loss(predictions, targets, reduction="sum").reshape(1)
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        scale_kernel[(1,)](predictions, targets, s, out, 1.0 / predictions.numel())
        return out
