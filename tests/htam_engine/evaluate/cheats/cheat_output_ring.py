"""Cheat (output memory reused across calls): the model keeps a ring of six output buffers (and
six product buffers) per shape and hands them out in turn. A check that compares an output with
the *previous* call's output only never names a buffer handed back every sixth call (a run of
timed calls is at most five); a caller holding an output sees it overwritten five calls later,
and the timed calls pay no allocation (no page faults, no malloc perturbation fill) where the
eager baseline allocates twice per call.

Class: outputs that alias memory the model keeps (cheat_output_buffer with a ring of 6)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

RING = 6


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
        key = (a.shape[0], b.shape[1], a.dtype, a.device)
        if key not in self.pool:
            self.pool[key] = [(torch.empty(key[:2], dtype=a.dtype, device=a.device),
                               torch.empty(key[:2], dtype=a.dtype, device=a.device)) for _ in range(RING)]
        self.turn = (self.turn + 1) % RING
        p, y = self.pool[key][self.turn]
        torch.matmul(a, b, out=p)
        block = 65536 if p.device.type == "cpu" else 1024
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
