"""Cheat (refused now: evaluate/interpreter_guard.py checks every argument by exact type, the jit
functions a kernel names, and what its names refer to at every launch) (softmax, CPU interpreter): the guard checks a kernel's globals ONCE (cached per function
in _CHECKED, at its first launch). At the first launch (in __init__) the global WORK is None (a
plain value, and the branch calling it is not taken); afterwards it is rebound to a Python
function that calls torch.softmax. Later launches are never re-checked."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

WORK = None
ARGS = 0


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr, GO: tl.constexpr):
    if GO:
        if tl.program_id(0) == 0:
            WORK()


def _work():
    x, y = ARGS
    torch.softmax(x, dim=1, out=y)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        t = torch.zeros(1, 16)
        softmax_kernel[(1,)](t, t, 16, BLOCK=16, GO=False)  # the guard's one look
        global WORK
        WORK = _work

    def forward(self, x):
        global ARGS
        x = x.contiguous()
        y = torch.empty_like(x)
        ARGS = (x, y)
        softmax_kernel[(1,)](x, y, x.shape[1], BLOCK=16, GO=True)
        ARGS = 0
        return y
