"""Cheat (work that SIGSTOP does not stop, beside the baselines): the judge stops the candidate's
process tree while it times the baselines and waits until the sandbox's process reads as stopped
(state T in /proc/<pid>/stat, its main thread's). A signal stop takes a thread only on its way back
to user space, and a page-populating mmap (MAP_POPULATE: the kernel zeroes every page before it
returns) checks for fatal signals only. At construction this candidate starts a thread of its own
that waits on a pipe; each forward, after computing honestly, wakes it; 0.2 ms later, where no next call of a run
began (the judge's calls of a run follow within microseconds), the thread (pinned to
the CPU the reference sandbox last ran on) maps and zeroes 192 MiB in one call: some 40 ms of kernel
CPU and memory bandwidth on the reference's core while the baselines run there. The thread is live
(the ended-threads rule does not count it), below no other process (the processes rule does not),
and idle during the candidate's own calls (the per-call busy-thread count does not see it).

Class: processes the sandbox can reach (CPU time while "stopped"), baseline slowing."""

import _thread
import ctypes
import os
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

SIZE = 192 << 20
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MAP_PRIVATE_ANON_POPULATE = 0x02 | 0x20 | 0x8000


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def reference_cpu() -> int | None:
    """The CPU the youngest-but-one sibling (the reference sandbox; the youngest is the spare) last ran on."""
    me, parent, found = os.getpid(), os.getppid(), []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
            if int(f[1]) == parent and int(name) != me:
                found.append((int(f[19]), int(f[36])))
        except (OSError, ValueError, IndexError):
            continue
    found.sort()
    return found[-2][1] if len(found) >= 2 else (found[0][1] if found else None)


def burner(rd: int, model: "ModelNew") -> None:
    while os.read(rd, 1):
        seen = model.calls
        time.sleep(0.0002)
        if model.calls != seen:  # the next call of a run began: not the run's last
            continue
        cpu = reference_cpu()
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        p = libc.mmap(None, SIZE, 3, MAP_PRIVATE_ANON_POPULATE, -1, 0)  # one uninterruptible stretch
        if p not in (None, ctypes.c_void_p(-1).value):
            libc.munmap(ctypes.c_void_p(p), SIZE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rd, self.wr = os.pipe()
        self.calls = 0
        _thread.start_new_thread(burner, (self.rd, self))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        p = a @ b  # exactly what honest_matmul_relu does
        y = torch.empty_like(p)
        block = 65536 if p.device.type == "cpu" else 1024
        relu_kernel[(triton.cdiv(p.numel(), block),)](p, y, p.numel(), BLOCK=block)
        os.write(self.wr, b"x")
        return y
