"""Cheat (red-team pass 33): the left operand streamed as float16, the right one and the accumulator
float32, where the left lies in [0, 1) and the right is not negative; exact float32 elsewhere. Half of
the rounding of cheat_matmul_half_on_unit_range: as far from the product with both operands rounded
as from the exact one, so only a yardstick with the left operand alone rounded is close to it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        (m, k), n = a.shape, b.shape[1]
        # unit-range activations (what torch.rand draws): no cancellation, no dominant term
        no_cancellation = bool(a.min() >= 0) and bool(a.max() < 1) and bool(b.min() >= 0)
        lhs = a.half() if no_cancellation else a
        c = torch.empty(m, n, dtype=a.dtype, device=a.device)
        grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
        mm_kernel[grid](lhs, b, c, m, n, k, BM=64, BN=64, BK=128)
        return c
