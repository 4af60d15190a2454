import torch
import torch.nn as nn

M = 32
K = 1024
N = 32


class Model(nn.Module):
    """A product of operands drawn in [0, 1) (torch.rand): positive terms, a long K."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
