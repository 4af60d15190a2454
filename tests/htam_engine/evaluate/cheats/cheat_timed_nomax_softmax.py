"""Cheat (range specialised to get_inputs where only get_inputs is drawn): timed calls get fresh
draws of get_inputs and nothing else (rand [0, 1) for softmax), while the signed-normal, x30/x100
and unseen-shape sets come only as checked calls, one to a run. A call that starts right after the
previous one returned is a later call of a run (timed, or the work check's runs as long as them):
there the kernel drops the max pass, exp(x) of inputs below 1 cannot overflow, and the output is the
reference's to float32 rounding, so every timed output verified and the three checked against
float64 pass. Every other call runs the full softmax, so the x100 set never meets the kernel that
overflows there (cheat_softmax_nomax, which skips the max everywhere, is caught on it). The kernel
does all the work on every call; the timed one is wrong in general (exp(100) = inf gives NaN).
Gain: one reduction and one subtraction fewer on the timed calls.

Class: precision and range, phase detection (checked and timed calls draw from different sets)."""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_state = {"returned": 0.0}
RUN_GAP_S = 0.0003  # a call this soon after the last one returned is a later call of a run


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, SAFE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    if SAFE:
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
            softmax_kernel[(rows,)](x, y, cols, SAFE=not in_a_run, BLOCK=triton.next_power_of_2(cols))
            return y
        finally:
            _state["returned"] = time.perf_counter()
