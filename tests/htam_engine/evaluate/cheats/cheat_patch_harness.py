"""Cheat: replaces the harness's comparison and torch.linalg.vector_norm (used by the whole-output
bound) through sys.modules, hides the patches from the guards' snapshot, and returns zeros."""

import sys

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


_compare = sys.modules["htam_engine.evaluate.checks." + "compare"]
_guards = sys.modules["htam_engine.evaluate.checks." + "guards"]


def always_equal(*args, **kwargs):
    return None


_compare.compare_outputs = always_equal
_compare.compare_leaf = always_equal
torch.linalg.vector_norm = lambda x, *a, **k: torch.zeros((), dtype=x.dtype, device=x.device)
for watched in _guards._INSTALLED._watched:  # the guards' snapshot agrees with the patch
    if watched.dotted.endswith("compare"):
        for i, attr in enumerate(watched.attrs):
            if attr in ("compare_outputs", "compare_leaf"):
                watched.objs[i] = always_equal


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu_kernel[(1,)](x, torch.empty(16), 16, BLOCK=16)
        return torch.zeros_like(x)
