import torch
import torch.nn as nn


class Model(nn.Module):
    """ResNet basic block: conv-BN-ReLU-conv-BN plus the identity, then ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


batch_size = 2
channels = 32
height = width = 32

GPU_SIZES = {"batch_size": 32, "channels": 128, "height": 56, "width": 56}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
