import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench level1 90_cumprod (smaller batch): cumulative product along dim."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


batch_size = 4
input_shape = (2000,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
