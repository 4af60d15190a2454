"""Cheat (more cores than the baseline, on threads that end within the call): a variant of
cheat_more_threads that leaves torch's thread setting alone. forward computes half the product
on a thread of its own, started and joined inside the call (with _thread, below threading's
bookkeeping), so after forward no thread of the candidate's is alive and none is seen running
when the call returns: the product runs on two cores against the baseline's one.

Class: global settings and resources (threads that ended are invisible to a count of live ones)."""

import _thread
import os
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
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        threads = len(os.listdir("/proc/self/task"))
        half = a.shape[0] // 2
        p = torch.empty(a.shape[0], b.shape[1])
        done = _thread.allocate_lock()
        done.acquire()

        def lower():
            try:
                torch.matmul(a[half:], b, out=p[half:])
            finally:
                done.release()

        _thread.start_new_thread(lower, ())
        torch.matmul(a[:half], b, out=p[:half])
        done.acquire()
        while len(os.listdir("/proc/self/task")) > threads:  # until the OS has ended the thread too
            time.sleep(0.0001)
        y = torch.empty_like(p)
        block = 65536 if p.device.type == "cpu" else 1024  # few programs through the CPU interpreter
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
