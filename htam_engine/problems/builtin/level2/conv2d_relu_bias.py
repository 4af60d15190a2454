import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, ReLU, then a learned per-channel bias added after the activation."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


batch_size = 4
in_channels = 8
out_channels = 32
height = width = 64
kernel_size = 3
bias_shape = (out_channels, 1, 1)

GPU_SIZES = {"batch_size": 64, "in_channels": 32, "out_channels": 64, "height": 128, "width": 128}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
