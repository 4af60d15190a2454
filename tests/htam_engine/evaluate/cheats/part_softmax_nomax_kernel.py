import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, SAFE: tl.constexpr, BLOCK: tl.constexpr, SAMPLE: tl.constexpr = 0):
    # One row's softmax. Not SAFE: no max pass, on every row (SAMPLE 0) or only on the rows whose first
    # SAMPLE elements lie in [0, 1), get_inputs' own range (others get the full softmax).
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    if SAFE:
        x = x - tl.max(x, axis=0)
    elif SAMPLE > 0:
        s = tl.arange(0, SAMPLE)
        v = tl.load(x_ptr + row * cols + s, mask=s < cols, other=0.5)
        in_range = (tl.min(v, axis=0) >= 0.0) & (tl.max(v, axis=0) < 1.0)
        if not in_range:
            x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)
