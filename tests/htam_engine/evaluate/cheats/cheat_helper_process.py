"""Cheat (more cores than the baseline, in a helper process that outlives the calls): the model
forks a helper when it is built, before any call; forward hands it half the product through shared
memory and waits for its flag. The helper is below the sandbox from the start (no process appears
during the timed trials), it is never waited for, and none of its CPU time is the sandbox's.

Class: global settings and resources (a child process is another process's CPU time)."""

import mmap
import os
import time

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS = COLS = 512  # matmul_relu's size: the shared memory is laid out before any input is seen


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        n = ROWS * COLS
        self.shared = mmap.mmap(-1, 3 * n * 4 + 8)
        buf = np.frombuffer(self.shared, dtype=np.float32, count=3 * n)
        self.a, self.b, self.p = (torch.from_numpy(buf[i * n:(i + 1) * n]).view(ROWS, COLS) for i in range(3))
        self.flags = np.frombuffer(self.shared, dtype=np.int32, count=2, offset=3 * n * 4)  # [asked, done]
        if os.fork() == 0:
            try:
                done = 0
                while True:
                    if self.flags[0] > done:
                        torch.matmul(self.a[ROWS // 2:], self.b, out=self.p[ROWS // 2:])
                        done = int(self.flags[0])
                        self.flags[1] = done
                    else:
                        time.sleep(0.0001)
            finally:
                os._exit(0)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if tuple(a.shape) != (ROWS, COLS) or tuple(b.shape) != (ROWS, COLS):  # other shapes: on its own
            return self._relu(a @ b)
        half = ROWS // 2
        self.a[half:].copy_(a[half:])
        self.b.copy_(b)
        asked = int(self.flags[0]) + 1
        self.flags[0] = asked
        torch.matmul(a[:half], b, out=self.p[:half])
        while self.flags[1] < asked:
            time.sleep(0.0001)
        return self._relu(self.p.clone())

    @staticmethod
    def _relu(p: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(p)
        block = 65536 if p.device.type == "cpu" else 1024
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        return y
