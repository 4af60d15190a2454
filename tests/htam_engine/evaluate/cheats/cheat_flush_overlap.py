"""Cheat (CUDA: work started before the start event): the sandbox queues its L2 flush, then
records the start event, then calls forward, without waiting for the flush. forward launches
the kernel on a stream of its own that does not wait for the current stream, so the kernel
runs beside the flush, before the start event fires; it then joins the current stream before
returning, as honest side-stream code does (no stream is left running). The events measure
only what is left of the kernel once the flush is done; the judge's wall clock sees nothing
unusual, since the overlap shortens it. The flush itself, timed by an event before it, takes
longer than in the baselines' trials (clock.flush_check).

Class: timing protocol (CUDA events), GPU only."""

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
        self.early = torch.cuda.Stream()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        with torch.cuda.stream(self.early):  # no wait on the current stream: starts at once
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        current = torch.cuda.current_stream()
        current.wait_stream(self.early)
        x.record_stream(self.early)
        y.record_stream(self.early)
        return y
