import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RMS-normalize x, then gate it with SiLU of a second input (a gated-norm chain)."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x, gate):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return x * F.silu(gate)


batch_size = 1024
hidden = 1024
eps = 1e-5

GPU_SIZES = {"batch_size": 16384, "hidden": 4096}


def get_inputs():
    return [torch.randn(batch_size, hidden), torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden, eps]
