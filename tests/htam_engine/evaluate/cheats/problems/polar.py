import torch
import torch.nn as nn

batch_size = 4
dim = 256


class Model(nn.Module):
    """abs * exp(i * angle): a complex64 output from two float32 inputs."""

    def __init__(self):
        super().__init__()

    def forward(self, magnitude: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        return torch.polar(magnitude, angle)


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim) * 6.283]


def get_init_inputs():
    return []
