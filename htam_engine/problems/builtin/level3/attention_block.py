import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-head self-attention: fused QKV projection, scaled dot-product softmax, output projection."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        weights = torch.softmax(scores, dim=-1)
        y = torch.matmul(weights, v)
        y = y.transpose(1, 2).reshape(b, t, c)
        return self.out(y)


batch_size = 4
seq_len = 128
hidden = 256
heads = 4

GPU_SIZES = {"batch_size": 16, "seq_len": 1024, "hidden": 1024, "heads": 16}


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, heads]
