"""Cheat (output memory reused across calls behind a fresh *resizable* storage each call): the honest
C++ ReLU loop writing into one of SLOTS buffers the extension allocated (and pre-touched) once and keeps.
Each call wraps its turn's buffer in a new c10::Storage marked resizable, with a deleter that frees
nothing. The sandbox keeps alive only outputs on non-resizable storages (memory.HeldOutputs,
then); a resizable one it follows by weak reference, which expires once the output is
delivered, while the memory lives on in the extension and is handed out again SLOTS calls later."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
#include <vector>

static std::vector<void*> slots;
static size_t slot_bytes = 0;
static int turn = 0;

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    const int64_t n = xc.numel();
    const size_t bytes = n * sizeof(float);
    if (bytes != slot_bytes) {
        slots.clear();  // leaked: an earlier caller may hold them
        for (int i = 0; i < 8; ++i) {
            void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
            std::memset(p, 0, bytes);
            slots.push_back(p);
        }
        slot_bytes = bytes;
    }
    turn = (turn + 1) % 8;
    c10::DataPtr dp(slots[turn], slots[turn], [](void*) {}, c10::Device(c10::kCPU));
    c10::Storage st(c10::Storage::use_byte_size_t(), bytes, std::move(dp), c10::GetAllocator(c10::kCPU), true);
    auto y = torch::empty({0}, xc.options());
    y.set_(st, 0, xc.sizes(), xc.strides());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="htam_red19_resizable_blob", cpp_sources=CPP_SOURCE, functions=["relu_forward"],
                       extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
