"""Cheat (refused now: evaluate/interpreter_guard.py checks every argument by exact type, the jit
functions a kernel names, and what its names refer to at every launch) (softmax, CPU interpreter): the guard checks only CONSTEXPR launch arguments; a plain
(non-constexpr) argument that is an arbitrary Python object goes through the interpreter's
_implicit_cvt unchanged. The kernel body calls it (a Name that is a parameter: allowed), and
the callable runs torch.softmax(x, out=y) on the very tensors the kernel was handed."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Work:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __call__(self):
        torch.softmax(self.x, dim=1, out=self.y)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, WORK, BLOCK: tl.constexpr):
    if tl.program_id(0) == 0:
        WORK()


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(1,)](x, y, x.shape[1], _Work(x, y), BLOCK=16)
        return y
