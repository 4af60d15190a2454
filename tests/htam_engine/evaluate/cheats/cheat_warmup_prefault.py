"""Cheat (red-team pass 18): ReLU in C++ that makes the sandbox's untimed warm-up forward (the one
each wire.Arm runs before the judge writes the inputs) allocate and pre-touch the output buffers of
the calls that follow it. The warm-up is told apart by its input alone: the sandbox's private copy
is a clone (a resizable storage), every real call's input a view of the judge's shared buffer
(torch.from_file: not resizable). The warm-up fills a pool of fresh, page-faulted buffers, one per
call a run may have; each timed call takes one, so none pays malloc (glibc's perturbation memset
under the trial) or page faults. No thread, no input value used, each buffer handed out once; the
ReLU itself is the honest loop."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cstring>
#include <deque>

static std::deque<torch::Tensor> pool;

torch::Tensor relu_forward(torch::Tensor x, bool warm) {
    auto xc = x.contiguous();
    const int64_t n = xc.numel();
    if (!pool.empty() && pool.front().numel() != n) pool.clear();
    if (warm) {
        while (pool.size() < 5) {  // a run has at most 5 calls
            auto t = torch::empty({n}, xc.options());
            std::memset(t.data_ptr<float>(), 0, n * sizeof(float));  // fault every page in now
            pool.push_back(t);
        }
    }
    torch::Tensor y;
    if (!warm && !pool.empty()) { y = pool.front().view(xc.sizes()); pool.pop_front(); }
    else y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="htam_red18_warmup_prefault", cpp_sources=CPP_SOURCE, functions=["relu_forward"],
                       extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x, x.untyped_storage().resizable())
