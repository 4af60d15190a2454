import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution, GroupNorm, SiLU: the body of a diffusion-model residual block."""

    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x)))


batch_size = 4
in_channels = 16
out_channels = 32
height = width = 32
kernel_size = 3
groups = 8

GPU_SIZES = {"batch_size": 32, "in_channels": 64, "out_channels": 128, "height": 64, "width": 64}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
