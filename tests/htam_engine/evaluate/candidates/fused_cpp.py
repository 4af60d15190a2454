"""Honest C++ candidate: one fused, vectorized pass over the input instead of four eager kernels."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor scale_shift_relu(torch::Tensor x, double scale) {
    TORCH_CHECK(x.device().is_cpu(), "expects a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expects float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* __restrict__ in = xc.data_ptr<float>();
    float* __restrict__ out = y.data_ptr<float>();
    const float s = static_cast<float>(scale);
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i] * s + 1.0f;
        out[i] = (v < 0.0f ? 0.0f : v) * 0.5f;  // a select (NaN stays NaN), vectorized
    }
    return y;
}
"""

_ext = load_inline(
    name="scale_shift_relu",
    cpp_sources=CPP_SOURCE,
    functions=["scale_shift_relu"],
    # -fno-trapping-math lets gcc turn the select into SIMD masks (it keeps NaN semantics).
    extra_cflags=["-O3", "-fno-trapping-math"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_shift_relu(x, self.scale)
