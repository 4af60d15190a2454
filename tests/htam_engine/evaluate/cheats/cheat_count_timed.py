"""Cheat (PyTorch on the timed calls, found by counting): the unseen-shape set's calls mark the end
of the checks; from there the judge's calls come in an order a config fixes (the call on garbage
before timing, the timed runs, then the work check). This candidate runs its softmax kernel on
every call but the ones it counts as timed, where PyTorch computes and a one-row launch of the
kernel into a scratch row runs beside it. Counted for the suite's config (harness.check_config: one
warm-up call, three trials in one run): ok at PyTorch's speed while the work check's run on garbage
came right after the timed runs. That run now takes the place of a timed run drawn at random, one
run more being made: the counted calls are the first of the two runs after the warm-up, the timed
run or the run on garbage as the draw fell (caught in one evaluation in two; PyTorch on both runs
is caught always: cheat_count_timed_all).

Class: no_kernel rule (PyTorch on the timed calls, told apart by counting)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


# Calls after the first unseen-shape call that the judge timed while the run on garbage followed the
# timed runs (counted once): the warm-up call, and the first run after it with the warm-ups around it.
TIMED = range(4, 10)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.shape, self.since_unseen = None, None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.shape is None:
            self.shape = x.shape
        if self.since_unseen is not None:
            self.since_unseen += 1
        elif x.shape != self.shape:
            self.since_unseen = 0
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        if self.since_unseen in TIMED:
            y.copy_(torch.softmax(x, dim=1))
            scratch = torch.empty(1, cols, device=x.device)
            softmax_kernel[(1,)](x, scratch, cols, BLOCK=triton.next_power_of_2(cols))  # one row, to look busy
            return y
        softmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
