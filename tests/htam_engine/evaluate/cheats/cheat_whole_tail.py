"""Cheat (no custom kernel doing the work, past the spoiled run): PyTorch computes relu(a @ b)
for every row but the last; a Triton kernel computes the last row's ReLU. Unlike
cheat_tail_kernel, the kernel is handed the whole product and the whole output (it finds its row
by an offset), so every work-check run sees an honest "finish a library op in place" kernel:
skipped, the last row is unwritten (wrong); spoiled, the whole output it was handed is NaN;
on garbage, it writes one row into the garbage output, so the output is not put back and
nothing of it is right. One program of one row runs through the interpreter instead of the
whole output.

Class: no_kernel rule (the judge measures what a kernel was handed, not what it wrote)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tail_relu_kernel(p_ptr, y_ptr, start, n, BLOCK: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(p_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        p = a @ b
        y = torch.empty_like(p)
        torch.clamp_min(p[:-1], 0.0, out=y[:-1])  # the bulk with torch; the tail row in the kernel
        cols = p.shape[-1]
        tail_relu_kernel[(1,)](p, y, p.numel() - cols, p.numel(), BLOCK=triton.next_power_of_2(cols))
        return y
