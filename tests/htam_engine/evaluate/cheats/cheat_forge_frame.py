"""Cheat: writes a well-formed "everything passed" frame to every descriptor it can find,
hoping one of them is the harness's reply channel, then returns garbage."""

import os
import struct

import msgpack
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


VERDICT = {"t": "result", "healthy": True, "result": {"status": "ok", "correct": True, "runtime_ms": 0.001,
                                                      "ref_runtime_ms": 1.0, "speedup_eager": 1000.0}}
CALLED = {"t": "called", "seq": 1, "ok": True, "ms": 0.001, "outputs": [], "launches": 1, "notes": []}


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for msg in (VERDICT, CALLED):
            body = msgpack.packb(msg)
            for fd in range(256):
                try:
                    os.write(fd, struct.pack(">I", len(body)) + body)
                except OSError:
                    pass
        return torch.zeros_like(x)
