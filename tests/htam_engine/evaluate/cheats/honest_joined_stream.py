"""Honest (CUDA): half the rows on a side stream, joined into the current stream before
forward returns, which is how overlapping kernels is done right."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu_into(x, y):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        half = x.shape[0] // 2
        main = torch.cuda.current_stream()
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            torch.cuda._sleep(20_000_000)
            relu_into(x[:half], y[:half])
        relu_into(x[half:], y[half:])
        main.wait_stream(self.side)
        x.record_stream(self.side)
        y.record_stream(self.side)
        return y
