"""Honest: GELU (erf) plus the reference's own noise draw (same seed, same order), in one kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_noise_kernel(x_ptr, z_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)) + 0.1 * z, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        z = torch.randn_like(x)
        y = torch.empty_like(x)
        gelu_noise_kernel[(triton.cdiv(x.numel(), 1 << 16),)](x, z, y, x.numel(), BLOCK=1 << 16)
        return y
