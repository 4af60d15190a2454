"""Cheat: cheat_output_ring_numpy with a ring of 32, past the 16 foreign outputs the sandbox keeps alive
(memory.HeldOutputs then; the untimed warm-ups take turns too): the memory handed out again
is that of an output dropped from the record long before.

Original: cheat_output_ring, but
the ring's memory is held as numpy arrays, and each call wraps its turn's arrays in a new tensor
(torch.from_numpy: a new storage every time). The sandbox remembers the *storages* of earlier
outputs by weak reference (memory.HeldOutputs); once delivered, the wrapping storage is freed and
its reference expires, while the memory lives on in the model, handed out again 32 calls later.
A caller holding an output sees it overwritten; the timed calls pay no allocation (no page faults,
no malloc perturbation fill) where the eager baseline allocates twice per call."""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

RING = 32  # past the 16 outputs the sandbox once kept alive, warm-ups' turns between them


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = {}
        self.turn = 0

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (a.shape[0], b.shape[1])
        if key not in self.pool:
            self.pool[key] = [(np.empty(key, np.float32), np.empty(key, np.float32)) for _ in range(RING)]
        self.turn = (self.turn + 1) % RING
        p, y = (torch.from_numpy(m) for m in self.pool[key][self.turn])  # new storages, old memory
        torch.matmul(a, b, out=p)
        block = 65536
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
