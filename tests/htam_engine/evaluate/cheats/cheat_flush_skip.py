"""Cheat (CUDA: the trials run on a warm L2): the sandbox's L2 flusher is an object in the
candidate's own process; found through gc when the model is built, its writes are cut to none, so
no trial's inputs are flushed from the L2 before the start event. The kernel is honest. The flush,
timed by an event before it, takes next to nothing against the baselines' (clock.short_flush_check).

Class: harness tampering (the timing protocol's own objects), GPU only."""

import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for o in gc.get_objects():
            if type(o).__name__ == "L2Flusher":
                o.writes = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
