"""Cheat (the work check's first run told apart, then latched; red-team pass 8): PyTorch does the
work of every checked and timed call, beside a one-element probe kernel writing a flag. The first
call that leaves the flag unwritten is a work-check run with kernels skipped: from then on the
candidate runs its real kernel, so every later run of the work check (kernels raising, on garbage,
spoiled) finds a kernel doing necessary work. It came back ok at PyTorch's speed (3-7x an honest
kernel's) while the whole work check followed the timed rounds and began with the skipped run; a
run on garbage before the timed rounds now meets it in its PyTorch phase, where the probe still
writes its flag.

Class: no_kernel rule (decoy kernel), phase detection of the work check by its place and order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_honest = [False]


@triton.jit
def flag_kernel(flag_ptr):
    tl.store(flag_ptr, 1.0)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _honest[0]:
            flag = torch.zeros(1, device=x.device)
            flag_kernel[(1,)](flag)  # raises when kernels raise: so does this forward
            if float(flag) == 1.0:
                return torch.relu(x)
            _honest[0] = True  # kernels skipped: the work check has begun
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
