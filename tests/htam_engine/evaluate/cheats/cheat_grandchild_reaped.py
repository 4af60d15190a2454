"""Cheat (work in processes whose CPU time nobody reads): on the CPU the judge reads, from outside,
the sandbox's own CPU time, that of the children it waited for, and each process still below it
at both ends of the timed trials. A grandchild reaped by a helper is none of these: its time goes
to the helper's children's time (cutime), which is read for the sandbox only. At construction this
candidate starts a lean helper (a fresh Python with numpy, exec'd, one BLAS thread) sharing a memfd;
each forward copies the bottom half of `a` and `b` there and wakes the helper, which forks a
grandchild that computes relu(a_bottom @ b) into the shared output and exits, and reaps it. The
sandbox meanwhile does the top half with PyTorch's product and the Triton ReLU, waits, and returns
the whole output. The helper's own CPU (a small process's fork per call) stays below the processes
rule's floor; the per-call busy-thread count reads the sandbox's threads only. Half the work of
every call runs on a second core.

Class: work moved into another process, hidden from the CPU accounting."""

import mmap
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl

HELPER = r"""
import mmap, os, sys
import numpy as np
fd, go, done, n = (int(v) for v in sys.argv[1:5])
h = n // 2
while True:
    if not os.read(go, 1):
        os._exit(0)
    g = os.fork()
    if g == 0:
        buf = mmap.mmap(fd, 0)
        f = np.frombuffer(buf, dtype=np.float32)
        a = f[: (n - h) * n].reshape(n - h, n)
        b = f[(n - h) * n : (n - h) * n + n * n].reshape(n, n)
        y = f[(n - h) * n + n * n :].reshape(n, n)
        np.maximum(a @ b, 0, out=y[h:])
        os.write(done, b"d")
        os._exit(0)
    os.waitpid(g, 0)
"""


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = None

    def start(self, n: int) -> None:
        h = n // 2
        fd = os.memfd_create("shared")
        os.ftruncate(fd, 4 * ((n - h) * n + 2 * n * n))
        self.buf = mmap.mmap(fd, 0)
        f = torch.frombuffer(self.buf, dtype=torch.float32)
        self.a = f[: (n - h) * n].view(n - h, n)
        self.b = f[(n - h) * n : (n - h) * n + n * n].view(n, n)
        self.y = f[(n - h) * n + n * n :].view(n, n)
        go_r, self.go = os.pipe()
        self.done, done_w = os.pipe()
        env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
        for keep in (fd, go_r, done_w):
            os.set_inheritable(keep, True)
        if os.fork() == 0:
            os.execve(sys.executable, [sys.executable, "-S", "-c", HELPER, str(fd), str(go_r), str(done_w), str(n)],
                      {**env, "PYTHONPATH": os.path.dirname(os.path.dirname(np.__file__))})
        os.close(go_r)
        os.close(done_w)
        self.n = n

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.shape[0]
        if self.n != n or a.shape != (n, n) or b.shape != (n, n) or a.dtype != torch.float32:
            p = a @ b  # a shape it was not built for: all of it here
            y = torch.empty_like(p)
            relu_kernel[(triton.cdiv(p.numel(), 65536),)](p, y, p.numel(), BLOCK=65536)
            if a.dim() == 2 and a.shape == b.shape and a.shape[0] == a.shape[1] and a.dtype == torch.float32:
                self.start(n)
            return y
        h = n // 2
        self.a.copy_(a[h:])
        self.b.copy_(b)
        os.write(self.go, b"g")
        p = a[:h] @ b
        relu_kernel[(triton.cdiv(p.numel(), 65536),)](p, self.y[:h], p.numel(), BLOCK=65536)
        os.read(self.done, 1)
        return self.y.clone()
