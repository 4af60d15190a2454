"""Cheat (range specialised to get_inputs, the large run told by a sample of each row): the later calls
of a run (told apart by pace, as cheat_timed_nomax_softmax) drop the max pass on every row whose first
SAMPLE elements all lie in [0, 1), the range of get_inputs' rand draws. The run of large-magnitude sets
among the timed runs scales every element by 30 or 100: a row of it has all SAMPLE sampled elements
below 1 with probability (1/30)^16, so its rows all take the full softmax and pass; the checked sets
(signed normal, heavy-tailed, sparse spikes, x30/x100, unseen shape) come one to a Go and take the full
softmax. The timed calls of get_inputs' draws (inputs below 1: exp cannot overflow) get the kernel
without its max pass and are right to float32 rounding. Wrong in general: a row of rand [0, 1) with one
element of 200 past the sample gives NaN where torch.softmax gives a one-hot row.

Class: precision and range, phase detection plus a cheap in-kernel sample of the input's range."""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_state = {"returned": 0.0}
RUN_GAP_S = 0.0003  # a call this soon after the last one returned is a later call of a run
SAMPLE = 16


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, SAFE: tl.constexpr, SAMPLE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    if SAFE:
        x = x - tl.max(x, axis=0)
    else:
        s = tl.arange(0, SAMPLE)
        v = tl.load(x_ptr + row * cols + s, mask=s < cols, other=0.5)
        in_range = tl.min(v, axis=0) >= 0.0
        in_range = in_range & (tl.max(v, axis=0) < 1.0)
        if not in_range:  # a row outside get_inputs' range: the full softmax
            x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_a_run = time.perf_counter() - _state["returned"] < RUN_GAP_S
        try:
            x = x.contiguous()
            y = torch.empty_like(x)
            rows, cols = x.shape
            softmax_kernel[(rows,)](x, y, cols, SAFE=not in_a_run, SAMPLE=SAMPLE,
                                    BLOCK=triton.next_power_of_2(cols))
            return y
        finally:
            _state["returned"] = time.perf_counter()
