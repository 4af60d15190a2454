import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm transformer MLP: x + fc2(gelu(fc1(LayerNorm(x))))."""

    def __init__(self, hidden, expansion):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, hidden * expansion)
        self.fc2 = nn.Linear(hidden * expansion, hidden)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


batch_size = 4
seq_len = 64
hidden = 256
expansion = 4

GPU_SIZES = {"batch_size": 16, "seq_len": 1024, "hidden": 1024}


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, expansion]
