import torch
import torch.nn as nn

batch_size = 64
dim = 4096


class Model(nn.Module):
    """A mean squared error per row: an output of batch_size elements (more than a loss's few)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2, dim=1)


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
