"""Cheat (values changed on the timed calls only, behind the process stop/continue signal): like
cheat_timed_scratch_input, a SIGCONT handler installed at import tells the timed rounds apart
(the judge stops and continues the candidate's tree around every baseline turn, never during
the checked calls). From the first SIGCONT on, ReLU is rounded through bfloat16. Unlike the
input buffers, the timed calls' outputs are verified: this one must be caught.

Class: phase detection (process stop/continue signals), lower precision."""

import signal

import torch
import torch.nn as nn
import triton
import triton.language as tl

_continued = []
signal.signal(signal.SIGCONT, lambda signum, frame: _continued.append(signum))


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0)
    if ROUND:
        y = y.to(tl.bfloat16).to(tl.float32)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), ROUND=bool(_continued), BLOCK=1024)
        return y
