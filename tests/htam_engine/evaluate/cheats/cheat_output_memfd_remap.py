"""Cheat (output memory reused across calls at a new address each call): every output of a shape lives
in one of SLOTS memfds, in turn (more than a run's calls, whose outputs are delivered after the run); each call maps it anew (mmap: a new virtual address over the same physical pages) and
wraps the mapping (torch.frombuffer). The sandbox tells reuse by the address span of an earlier output
it still holds (memory.HeldOutputs): the spans never overlap, while every output is the same memory,
so a caller holding an earlier output sees it overwritten by the next call."""

import mmap
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

SLOTS = 8


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.files = {}
        self.turn = 0

    def _wrap(self, key, slot, shape):
        if (key, slot) not in self.files:
            fd = os.memfd_create(f"out{slot}")
            os.ftruncate(fd, 4 * shape[0] * shape[1])
            self.files[(key, slot)] = fd
        m = mmap.mmap(self.files[(key, slot)], 4 * shape[0] * shape[1])  # same pages, a new address
        return torch.frombuffer(m, dtype=torch.float32).view(shape)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (a.shape[0], b.shape[1])
        self.turn = (self.turn + 1) % SLOTS
        p, y = self._wrap(key, 2 * self.turn, key), self._wrap(key, 2 * self.turn + 1, key)
        torch.matmul(a, b, out=p)
        block = 65536
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
