import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, HardSwish, clamp, and a per-feature bias: a matmul with a mixed tail."""

    def __init__(self, in_features, out_features, clamp_max):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.clamp_max = clamp_max

    def forward(self, x):
        x = F.hardswish(self.linear(x))
        return torch.clamp(x, max=self.clamp_max) + self.bias


batch_size = 512
in_features = 384
out_features = 768
clamp_max = 1.5

GPU_SIZES = {"batch_size": 8192, "in_features": 2048, "out_features": 4096}


def get_inputs():
    return [torch.rand(batch_size, in_features) * 2.0 - 1.0]


def get_init_inputs():
    return [in_features, out_features, clamp_max]
