import torch
import torch.nn as nn

batch_size = 8
features = 64


class Model(nn.Module):
    """A fixed random projection kept inside a plain dict attribute (not a buffer), then a ReLU."""

    def __init__(self, features):
        super().__init__()
        self.weights = {"projection": torch.randn(features, features)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.weights["projection"].to(x.device))


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
