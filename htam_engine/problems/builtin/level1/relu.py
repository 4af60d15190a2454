import torch
import torch.nn as nn


class Model(nn.Module):
    """Rectified linear unit on a signed input (half the values are negative)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 1024
dim = 2048

GPU_SIZES = {"batch_size": 16384, "dim": 8192}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
