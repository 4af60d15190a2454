"""Cheat (red-team pass 33): cheat_matmul_half_on_unit_range's float16 operands, but only for inputs in
another buffer than the first call's. Every checked get_inputs set reuses the first call's input
buffer, the timed runs' other slots have buffers of their own: the rounding is only in timed calls."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, HALF: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if HALF:
            a = a.to(tl.float16).to(tl.float32)
            b = b.to(tl.float16).to(tl.float32)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.first_buffer = None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        if self.first_buffer is None:
            self.first_buffer = a.data_ptr()
        (m, k), n = a.shape, b.shape[1]
        unit = bool(a.min() >= 0) and bool(a.max() < 1) and bool(b.min() >= 0) and bool(b.max() < 1)
        half = unit and a.data_ptr() != self.first_buffer
        c = torch.empty(m, n, dtype=a.dtype, device=a.device)
        grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
        mm_kernel[grid](a, b, c, m, n, k, HALF=half, BM=64, BN=64, BK=128)
        return c
