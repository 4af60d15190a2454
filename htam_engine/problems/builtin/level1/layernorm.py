import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the hidden dimension, with learned weight and bias."""

    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


batch_size = 16
seq_len = 128
hidden = 768

GPU_SIZES = {"batch_size": 64, "seq_len": 1024}


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden) * 2.0 + 1.0]


def get_init_inputs():
    return [hidden]
