import torch
import torch.nn as nn


class Model(nn.Module):
    """Scores scaled by a temperature, an additive mask bias, then softmax over the last axis."""

    def __init__(self, temperature):
        super().__init__()
        self.inv_temperature = 1.0 / temperature

    def forward(self, scores, mask_bias):
        return torch.softmax(scores * self.inv_temperature + mask_bias, dim=-1)


batch_size = 8
heads = 8
seq_len = 128
temperature = 8.0

GPU_SIZES = {"batch_size": 16, "heads": 16, "seq_len": 1024}


def get_inputs():
    scores = torch.randn(batch_size, heads, seq_len, seq_len) * 4.0
    mask_bias = torch.zeros(seq_len, seq_len).masked_fill(
        torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1), -1e4
    )
    return [scores, mask_bias]


def get_init_inputs():
    return [temperature]
