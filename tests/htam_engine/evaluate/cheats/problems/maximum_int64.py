import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise maximum of two int64 tensors."""
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.maximum(x, y)


def get_inputs():
    return [torch.randint(-1000, 1000, (512, 1024), dtype=torch.int64),
            torch.randint(-1000, 1000, (512, 1024), dtype=torch.int64)]


def get_init_inputs():
    return []
