"""Test problem: an elementwise chain (scale, shift, ReLU, halve) over a flat tensor."""

import torch
import torch.nn as nn

N = 1024 * 1024  # 4 MB of float32: a fused single pass beats four eager passes


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * self.scale + 1.0) * 0.5


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return [2.0]
