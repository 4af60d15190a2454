"""Cheat (red-team pass 22, outlier allowance): cheat_sampled_sign_relu (ReLU taken as a plain copy when
64 elements sampled across the input are all >= 0; get_inputs draws rand [0, 1)) in C++, on an output
of 8,388,608 elements (relu 4096 x 2048), where compare.OUTLIER_SHARE lets floor(n / 1e6) = 8 elements of
htam's own sets fall outside the per-element tolerance. The sparse-negatives set puts exactly
sparse_count = 8 negatives in the input; the sample misses them (~94 %) and the copy keeps them
negative: 8 elements wrong, within the allowance's count. Wrong in general (sparse negatives).

Class: a shortcut fitted to get_inputs' distribution, wrong on as many elements as the allowance admits.

Figures: incorrect on relu 4096 x 2048, sparse negatives, whole-output relative error 0.0057 > 1e-4: the
count is within the allowance, the whole-output bound is not."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cstring>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    const int64_t n = xc.numel();
    const float* in = xc.data_ptr<float>();
    auto y = torch::empty_like(xc);
    float* out = y.data_ptr<float>();
    bool signed_ = false;
    for (int64_t i = 0; i < 64 && n; ++i) signed_ |= in[(i * 2654435761LL) % n] < 0.f;
    if (!signed_) { std::memcpy(out, in, n * sizeof(float)); return y; }
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="htam_red22_sampled_sign_relu_large", cpp_sources=CPP_SOURCE, functions=["relu_forward"],
                       extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
