import torch
import torch.nn as nn

batch_size = 4
dim = 256


class Model(nn.Module):
    """Random in training mode: every forward draws a new dropout mask."""

    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(torch.relu(x))


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
