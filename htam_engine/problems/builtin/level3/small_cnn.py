import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Two conv-ReLU-maxpool stages and a linear classifier over the flattened features."""

    def __init__(self, in_channels, num_classes, image_size):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * (image_size // 4) ** 2, num_classes)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


batch_size = 8
in_channels = 3
num_classes = 10
image_size = 32

GPU_SIZES = {"batch_size": 512, "image_size": 64}


def get_inputs():
    return [torch.rand(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, num_classes, image_size]
