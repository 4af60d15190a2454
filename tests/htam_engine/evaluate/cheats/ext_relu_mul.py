
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}

torch::Tensor relu_mul(torch::Tensor x, torch::Tensor noise) {
    auto xc = x.contiguous();
    auto nc = noise.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    const float* m = nc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; ++i) out[i] = (in[i] > 0.f ? in[i] : 0.f) * m[i];
    return y;
}
"""

ext = load_inline(name="htam_red18_relu_mul", cpp_sources=CPP_SOURCE, functions=["relu", "relu_mul"],
                  extra_cflags=["-O1"], verbose=False)
