import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 3 + 1, mask=mask)


@triton.jit
def low_word_kernel(x32_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x32_ptr + 2 * offs, mask=mask)  # the low word of each little-endian int64
    tl.store(y_ptr + offs, (x * 3 + 1).to(tl.int64), mask=mask)
