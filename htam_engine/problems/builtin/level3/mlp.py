import torch
import torch.nn as nn


class Model(nn.Module):
    """Three-layer perceptron with ReLU between layers."""

    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


batch_size = 128
in_features = 512
hidden = 512
out_features = 128

GPU_SIZES = {"batch_size": 4096, "in_features": 2048, "hidden": 4096, "out_features": 1024}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, out_features]
