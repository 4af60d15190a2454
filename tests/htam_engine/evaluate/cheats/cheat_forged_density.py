"""Cheat (forged output metadata): the stride-0 cheat again (one value per row, expanded), made
to pass. Whether an output is dense is decided by the sandbox's own `dense` function, and the
guards that would report a replaced harness function are silenced by replacing the method that
reports them (a class attribute no snapshot covers). The sandbox's copy into the shared buffer
then materialises the expanded values outside the timed window. (The judge decides density
from the shape and strides the sandbox reports, so the replaced function decides nothing.)

Class: metadata the sandbox reports (density), harness tampering below the snapshot."""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

HARNESS = "htam" + "_engine.evaluate."
sys.modules[HARNESS + "checks.guards"].Guards.verify = lambda self: []
sys.modules[HARNESS + "sandbox"].dense = lambda t: True


@triton.jit
def row_mean_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0) / cols)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        means = torch.empty(rows, 1, device=x.device)
        row_mean_kernel[(rows,)](x, means, cols, BLOCK=triton.next_power_of_2(cols))
        return means.expand(rows, cols)
