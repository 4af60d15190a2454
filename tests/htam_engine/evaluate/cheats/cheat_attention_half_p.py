"""Cheat (red-team pass 33): a fused attention whose unnormalised probabilities P are rounded to
float16 before P @ V (as FlashAttention stores P), divided by the float32 row sums after, where
V lies in [0, 1); exact float32 elsewhere. The rounding is of an intermediate, not an operand: no
yardstick of checks/rounded.py models it, and over 256 positive terms it averages out to 1.5e-5,
under the precision floor."""
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, D, scale, HALF_P: tl.constexpr,
                BM: tl.constexpr, BL: tl.constexpr, BD: tl.constexpr):
    b, pid = tl.program_id(0), tl.program_id(1)
    rm = pid * BM + tl.arange(0, BM)
    rl = tl.arange(0, BL)
    rd = tl.arange(0, BD)
    base = b * L * D
    q = tl.load(q_ptr + base + rm[:, None] * D + rd[None, :], mask=(rm[:, None] < L) & (rd[None, :] < D), other=0.0)
    kv_mask = (rl[:, None] < L) & (rd[None, :] < D)
    k = tl.load(k_ptr + base + rl[:, None] * D + rd[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + base + rl[:, None] * D + rd[None, :], mask=kv_mask, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    s = tl.where(rl[None, :] < L, s, float("-inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])  # unnormalized: the row's largest is exactly 1
    l = tl.sum(p, axis=1)
    if HALF_P:  # FlashAttention's P @ V: P in half precision, fp32 accumulate
        p = p.to(tl.float16).to(tl.float32)
    acc = tl.dot(p, v, input_precision="ieee")
    out = acc / l[:, None]
    tl.store(o_ptr + base + rm[:, None] * D + rd[None, :], out, mask=(rm[:, None] < L) & (rd[None, :] < D))


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        bsz, L, D = q.shape
        # P in half precision (as FlashAttention does) where V is nonnegative and in the unit range:
        # every term of P @ V is then nonnegative and none dominates, so the rounding averages out
        half_p = bool(v.min() >= 0) and bool(v.max() < 1)
        o = torch.empty_like(q)
        BL, BD = triton.next_power_of_2(L), triton.next_power_of_2(D)
        grid = (bsz, triton.cdiv(L, 64))
        attn_kernel[grid](q, k, v, o, L, D, 1.0 / math.sqrt(D), HALF_P=half_p, BM=64, BL=BL, BD=BD)
        return o
