"""Honest: ReLU in C++ through load_inline, a second source with honest_relu_cpp's flags (a
later candidate whose build is not in the cache yet)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="htam_checks_relu_cpp_second", cpp_sources=CPP_SOURCE, functions=["relu_forward"],
                       extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
