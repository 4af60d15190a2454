"""Cheat: finishes the output on a thread started below the threading module (invisible to
threading.enumerate)."""

import _thread
import time

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
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        self.calls += 1
        if self.calls <= 3:  # behave while a harness might be watching the first calls
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            return y
        relu_kernel[(1,)](x, y, 1, BLOCK=16)

        def finish():
            time.sleep(0.2)
            y.copy_(torch.relu(x))

        _thread.start_new_thread(finish, ())
        return y
