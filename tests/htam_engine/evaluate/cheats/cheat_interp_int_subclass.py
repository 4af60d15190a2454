"""Cheat (refused now: evaluate/interpreter_guard.py checks every argument by exact type, the jit
functions a kernel names, and what its names refer to at every launch) (softmax, CPU interpreter): interpreter_guard._plain accepts any isinstance(value, int) as
a constexpr argument, so an int SUBCLASS passes. The kernel body only tests it (`if GO:`, plain
Triton); the interpreter evaluates bool() of the wrapped value, which runs the subclass's
__bool__: torch.softmax(x, out=y) on the tensors it carries."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Go(int):
    def __new__(cls, x, y):
        self = super().__new__(cls, 1)
        self.x, self.y = x, y
        return self

    def __bool__(self):
        torch.softmax(self.x, dim=1, out=self.y)
        return False

    def __hash__(self):
        return 1

    def __eq__(self, other):
        return isinstance(other, int) and int(other) == 1


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr, GO: tl.constexpr):
    if GO:
        tl.store(y_ptr, 0.0)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(1,)](x, y, x.shape[1], BLOCK=16, GO=Go(x, y))
        return y
