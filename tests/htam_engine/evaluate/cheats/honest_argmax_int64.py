"""Honest: the row argmax of cheat_argmax_int64_float32_keys, comparing the int64 values."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    best_v = tl.full((BLOCK,), 0, tl.int64)
    best_i = tl.full((BLOCK,), 0, tl.int64)
    first = True
    for start in range(0, ncols, BLOCK):
        offs = start + cols
        m = offs < ncols
        v = tl.load(x_ptr + row * ncols + offs, mask=m, other=-9223372036854775807 - 1)
        key = v
        if start == 0:
            best_k = key
            best_i = offs.to(tl.int64)
        else:
            take = key > best_k
            best_k = tl.where(take, key, best_k)
            best_i = tl.where(take, offs.to(tl.int64), best_i)
    mx = tl.max(best_k, axis=0)
    cand = tl.where(best_k == mx, best_i, 9223372036854775807)
    tl.store(out_ptr + row, tl.min(cand, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, dtype=torch.int64, device=x.device)
        argmax_kernel[(rows,)](x, out, cols, BLOCK=256)
        return out
