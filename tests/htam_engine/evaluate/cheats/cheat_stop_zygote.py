"""Cheat (signals to the zygote): the sandbox's parent is the zygote every later sandbox is forked
from, a process of the same user; non-dumpable keeps ptrace out, not signals. The candidate
stops it (SIGSTOP) and computes honestly. A stopped zygote counts as alive: the next fork (the
spare for the next candidate, the next candidate itself) waits for an answer that never comes,
and the judge's remedy, killing the zygote's tree, takes the sandboxes running from it along.

Class: processes the sandbox can signal (the zygote), poisoning of later candidates."""

import os
import signal

import torch
import torch.nn as nn
import triton
import triton.language as tl

os.kill(os.getppid(), signal.SIGSTOP)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
