import torch
import torch.nn as nn

batch_size = 4
dim = 256


class Model(nn.Module):
    """SiLU in double precision: a float64 input, a float64 output."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.rand(batch_size, dim, dtype=torch.float64)]


def get_init_inputs():
    return []
