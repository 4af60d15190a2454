import torch
import torch.nn as nn

batch_size = 4
features = 32


class Model(nn.Module):
    """Two linear layers (built first, then second) and a ReLU between them."""

    def __init__(self, features):
        super().__init__()
        self.first = nn.Linear(features, features)
        self.second = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.relu(self.first(x)))


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
