import torch
import torch.nn as nn

batch_size = 4
dim = 256


class Model(nn.Module):
    """Every element replaced by its row's mean (a dense output)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1, keepdim=True) * torch.ones_like(x)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
