"""Cheat (a copy kernel, the suite's cheat_copy_kernel with one change): PyTorch computes the
whole ReLU into a scratch buffer one element longer than the output, and a Triton kernel copies
the first numel elements into the buffer forward returns. A copy rule that compared only tensors
of one size never compared them: the copied garbage stayed, the output was wrong, and every
work-check run said the kernel did all of the work. Run on garbage, the buffer now holds a run
of the scratch buffer's garbage, bit for bit, and gets the same run of its real values.

Class: no_kernel rule (a kernel that only copies does no work)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        scratch = torch.empty(n + 1, dtype=x.dtype, device=x.device)
        torch.clamp_min(x.reshape(-1), 0.0, out=scratch[:n])
        scratch[n] = 0.0
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(n, 1024),)](scratch, y, n, BLOCK=1024)
        return y
