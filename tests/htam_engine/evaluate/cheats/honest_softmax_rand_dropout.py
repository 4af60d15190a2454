"""Honest: softmax over the row, then the reference's own rand_like draw as a dropout mask (x 2)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_drop_kernel(x_ptr, u_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    u = tl.load(u_ptr + row * cols + offs, mask=mask, other=0.0)
    e = tl.exp(x - m)
    p = e / tl.sum(e, axis=0) * tl.where(u >= 0.5, 2.0, 0.0)
    tl.store(y_ptr + row * cols + offs, p, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        u = torch.rand_like(x)  # the reference's own draw
        y = torch.empty_like(x)
        rows, cols = x.shape[0] if x.dim() > 1 else 1, x.shape[-1]
        softmax_drop_kernel[(rows,)](x, u, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
