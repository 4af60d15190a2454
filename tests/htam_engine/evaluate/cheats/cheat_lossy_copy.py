"""Cheat (no custom kernel doing the work / a copy that is not bit for bit): PyTorch computes the
whole softmax; a Triton kernel "rescales" it into a fresh buffer as (t * 3) / 3, which rounds back
to t for most values and is one ulp off for ~15 % of them (far inside float32's precision rule).

On garbage everywhere the kernel's output is not the garbage it read bit for bit, so the copy rule
(_copies_made_real) does not take it for a copy. It is caught all the same, by another rule: the
fresh buffer's uninitialised memory holds the sandbox's finite poison marker on every other call,
one value throughout, so the switch counts it as a constant tensor and runs the kernel once more
with it real; the kernel then leaves the output within tolerance of the softmax's garbage, an
identity, made real after the run on garbage (_identities). Compare cheat_undo_scale_inplace,
which writes in place and meets no constant.

Class: no_kernel rule (a kernel that is the identity to within rounding)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rescale(t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, (tl.load(t_ptr + offs, mask=mask) * 3.0) / 3.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.softmax(x, dim=1)
        y = torch.empty_like(t)
        n = t.numel()
        rescale[(triton.cdiv(n, 4096),)](t, y, n, BLOCK=4096)
        return y
