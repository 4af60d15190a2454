"""Not a candidate: the C++ extension honest_matmul_relu_cpp and the cheat_cpp_aten* cheats
of its functions share, written once between them (each candidate still builds it under its own key: the build cache is
keyed by the whole candidate source); each includes it with a line `# include: ext_aten_calls`
(harness.candidate_source)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor matmul_relu(torch::Tensor a, torch::Tensor b) {
    auto p = at::matmul(a, b).contiguous();
    float* v = p.data_ptr<float>();
    const int64_t n = p.numel();
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.f ? v[i] : 0.f;
    return p;
}

torch::Tensor softmax_forward(torch::Tensor x) {
    return at::softmax(x, 1);
}

torch::Tensor softmax_clone(torch::Tensor x) {
    return at::softmax(x, 1).clone();
}

torch::Tensor softmax_reshaped(torch::Tensor x) {
    return at::softmax(x.unsqueeze(0), 2).squeeze(0);
}

torch::Tensor softmax_last_bit(torch::Tensor x) {
    auto p = at::softmax(x, 1).contiguous();
    int32_t* v = reinterpret_cast<int32_t*>(p.data_ptr<float>());
    const int64_t n = p.numel();
    for (int64_t i = 0; i < n; ++i) v[i] ^= 1;
    return p;
}

torch::Tensor mse_chain(torch::Tensor a, torch::Tensor b) {
    return at::mse_loss(a, b, at::Reduction::None).mean({0, 1}, true).squeeze();
}
"""

ext = load_inline(name="htam_checks_aten_calls", cpp_sources=CPP_SOURCE, functions=["matmul_relu", "softmax_forward", "softmax_clone", "softmax_reshaped", "softmax_last_bit", "mse_chain"],
                  extra_cflags=["-O1"], verbose=False)
