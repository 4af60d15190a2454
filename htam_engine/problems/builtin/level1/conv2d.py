import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, 3x3 kernel, padding 1 (same spatial size), with bias."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 16
out_channels = 32
height = width = 48
kernel_size = 3

GPU_SIZES = {"batch_size": 64, "in_channels": 64, "out_channels": 128, "height": 128, "width": 128}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
