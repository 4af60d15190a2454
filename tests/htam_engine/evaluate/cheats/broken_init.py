"""Broken: the constructor fails."""

import torch.nn as nn
import triton


@triton.jit
def unused_kernel(x_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("weights file not found")
