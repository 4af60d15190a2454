import torch
import torch.nn as nn


class Model(nn.Module):
    """Product of a (B, C, L) tensor and a per-channel (C, 1) gain: broadcast on two axes."""

    def __init__(self):
        super().__init__()

    def forward(self, x, gain):
        return x * gain


batch_size = 32
channels = 128
length = 512

GPU_SIZES = {"batch_size": 256, "channels": 256, "length": 2048}


def get_inputs():
    return [torch.randn(batch_size, channels, length), torch.rand(channels, 1) + 0.5]


def get_init_inputs():
    return []
