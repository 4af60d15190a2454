"""Cheat (refused now: evaluate/interpreter_guard.py checks every argument by exact type, the jit
functions a kernel names, and what its names refer to at every launch) (softmax, CPU interpreter): the guard reads only the LAUNCHED kernel's source; a
@triton.jit helper the kernel calls (a jit function: an allowed name) runs through
InterpretedFunction.__call__, which the guard never sees, and its body uses torch freely on
tensors a module global holds (set by forward)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_HELD = []


@triton.jit
def helper():
    x, y = _HELD[-1]
    torch.softmax(x, dim=1, out=y)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    if tl.program_id(0) == 0:
        helper()


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _HELD[:] = [(x, y)]
        softmax_kernel[(1,)](x, y, x.shape[1], BLOCK=16)
        _HELD.clear()
        return y
