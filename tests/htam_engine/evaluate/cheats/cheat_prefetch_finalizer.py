"""Cheat (shared input buffers read between calls, without any thread): the sandbox collects
garbage right after it sends each reply, which runs the finalizers of objects in reference
cycles. forward leaves one such object behind; its finalizer waits, in the sandbox's main
thread, until the judge writes the next call's inputs into the shared buffers (before it
computes its own reference and sends the call), and computes the product then. No thread, no
process, no patched function: only the ReLU is left for the next forward, as in
cheat_prefetch_thread.

Class: shared memory read at other times, timing protocol (the harness's own gc runs candidate code)."""

import os
import select
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


def sockets():
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                found.append(int(fd))
        except OSError:  # the descriptor listdir itself used
            continue
    return found


class Later:
    """In a reference cycle: finalized by the gc.collect that follows the reply."""

    def __init__(self, model):
        self.model, self.cycle = model, self

    def __del__(self):
        self.model.prefetch()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = None
        self.ready = None

    def prefetch(self):
        a, b = self.seen
        last = (float(a.view(-1)[-1]), float(b.view(-1)[-1]))
        channel = sockets()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if (float(a.view(-1)[-1]), float(b.view(-1)[-1])) != last:
                time.sleep(0.0005)  # let the judge finish writing
                a, b = a.clone(), b.clone()
                self.ready = (a, b, a @ b)
                return
            if select.select(channel, [], [], 0.0002)[0]:  # the next request came with the same inputs
                return

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.seen = (a, b)
        ready, self.ready = self.ready, None
        if ready is not None and ready[0].shape == a.shape and torch.equal(ready[0], a) and torch.equal(ready[1], b):
            p = ready[2]
        else:
            p = a @ b
        Later(self)
        y = torch.empty_like(p)
        block = 65536 if p.device.type == "cpu" else 1024  # few programs through the CPU interpreter
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
