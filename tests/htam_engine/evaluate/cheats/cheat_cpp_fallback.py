"""Cheat: a C++ kernel called wrongly inside try/except, so PyTorch does the work."""

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
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}

TORCH_LIBRARY(htam_checks, m) {
    m.def("relu(Tensor x) -> Tensor", &relu_forward);
}
"""

relu_ext = load_inline(name="htam_checks_relu_cpp", cpp_sources=CPP_SOURCE, functions=["relu_forward"],
                       extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return torch.ops.htam_checks.relu(x, x)  # wrong arity: raises every time
        except Exception:
            pass
        try:
            return relu_ext.relu_forward(x, x)  # likewise
        except Exception:
            return torch.relu(x)
