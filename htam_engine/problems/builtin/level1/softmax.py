import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension of a (rows, dim) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


batch_size = 1024
dim = 1024

GPU_SIZES = {"batch_size": 16384, "dim": 4096}


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
