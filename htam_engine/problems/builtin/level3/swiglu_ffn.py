import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gated feed-forward (SwiGLU): down(silu(gate(x)) * up(x)), no biases."""

    def __init__(self, hidden, inner):
        super().__init__()
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


batch_size = 256
hidden = 256
inner = 512

GPU_SIZES = {"batch_size": 8192, "hidden": 2048, "inner": 5632}


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden, inner]
