import torch
import torch.nn as nn


class Model(nn.Module):
    """Gate: sigmoid(x * scale + bias) multiplied back into x (a swish-like chain)."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.2)

    def forward(self, x):
        gate = torch.sigmoid(x * self.scale + self.bias)
        return x * gate


batch_size = 2048
features = 1024

GPU_SIZES = {"batch_size": 32768, "features": 4096}


def get_inputs():
    return [torch.rand(batch_size, features) * 4.0 - 2.0]


def get_init_inputs():
    return [features]
