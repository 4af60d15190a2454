"""Cheat (no custom kernel doing the work / PyTorch's step undone in place): PyTorch computes the
whole softmax times 3; a Triton kernel divides it by 3 in place and forward returns it. The kernel's
work is one division an element; PyTorch's is the softmax.

Every question of the work check answers "the kernel did the work": skipped, the output is 3x the
softmax (wrong); raising, forward raises; spoiled, NaN; on garbage the kernel divides garbage by 3,
writing the one tensor it was handed, so nothing is put back. The copy rule looks for a tensor
holding another's garbage (there is no other, and a third of garbage is no copy of it), and the
constants rule needs a constant tensor (3 is a literal). The same as cheat_noop_scale_packed's
scale of 1.0, with the scale split between PyTorch and the kernel.

Class: no_kernel rule (a kernel that undoes a step PyTorch added: the work check asks whether the
kernel's writes depend on what it read, not how much work they are)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def third(t_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(t_ptr + offs, tl.load(t_ptr + offs, mask=mask) / 3.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.softmax(x, dim=1).mul_(3.0)
        n = t.numel()
        third[(triton.cdiv(n, 4096),)](t, n, BLOCK=4096)
        return t
