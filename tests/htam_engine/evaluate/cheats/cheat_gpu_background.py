"""Cheat (CUDA): an honest kernel, plus a thread (hidden from the guards) that keeps the GPU busy
between the candidate's own calls, so baselines timed beside it look slower."""

import sys
import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def keep_busy():
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        while True:
            torch.cuda._sleep(1_000_000)  # about a millisecond of spinning, queued again and again
            stream.synchronize()


worker = threading.Thread(target=keep_busy, daemon=True)
worker.start()
sys.modules["htam_engine.evaluate.checks." + "guards"]._INSTALLED._trusted_threads.add(worker.ident)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
