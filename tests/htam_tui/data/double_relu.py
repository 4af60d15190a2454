import torch
import torch.nn as nn

N = 1024


class Model(nn.Module):
    """y = relu(2 x)"""

    def forward(self, x):
        return torch.relu(x * 2.0)


def get_inputs():
    return [torch.rand(N)]


def get_init_inputs():
    return []
