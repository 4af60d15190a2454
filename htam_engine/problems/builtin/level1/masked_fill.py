import torch
import torch.nn as nn


class Model(nn.Module):
    """Replace the masked entries of x by a constant (the mask is a boolean tensor)."""

    def __init__(self, fill_value):
        super().__init__()
        self.fill_value = fill_value

    def forward(self, x, mask):
        return x.masked_fill(mask, self.fill_value)


batch_size = 1024
dim = 2048
fill_value = -1.0

GPU_SIZES = {"batch_size": 16384, "dim": 8192}


def get_inputs():
    return [torch.randn(batch_size, dim), torch.rand(batch_size, dim) < 0.3]


def get_init_inputs():
    return [fill_value]
