import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear projection followed by LayerNorm over the output features."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(self.linear(x))


batch_size = 512
in_features = 256
out_features = 768

GPU_SIZES = {"batch_size": 16384, "in_features": 1024, "out_features": 4096}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
