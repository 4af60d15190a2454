"""Not a candidate: the C++ extension cheat_cpp_aten_op, cheat_cpp_aten_op_pointer and honest_matmul_relu_op
share, written once between them (each candidate still builds it under its own key: the build cache is
keyed by the whole candidate source); each includes it with a line `# include: ext_aten_op`
(harness.candidate_source)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/core/dispatch/Dispatcher.h>

torch::Tensor softmax_forward(torch::Tensor x) {
    return at::softmax(x, 1);
}

torch::Tensor matmul_relu(torch::Tensor a, torch::Tensor b) {
    auto p = at::matmul(a, b).contiguous();
    float* v = p.data_ptr<float>();
    const int64_t n = p.numel();
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.f ? v[i] : 0.f;
    return p;
}

// An operator without tensor arguments: the input reached by its address.
at::Tensor softmax_at(int64_t address, int64_t rows, int64_t cols) {
    auto x = torch::from_blob(reinterpret_cast<void*>(address), {rows, cols}, torch::kFloat);
    return at::softmax(x, 1);
}

at::Tensor softmax_by_pointer(const at::Tensor& x) {
    auto xc = x.contiguous();
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("htam_checks_aten_op::softmax_at", "")
                         .typed<at::Tensor(int64_t, int64_t, int64_t)>();
    return op.call(reinterpret_cast<int64_t>(xc.data_ptr<float>()), xc.size(0), xc.size(1));
}

TORCH_LIBRARY(htam_checks_aten_op, m) {
    m.def("softmax_at(int address, int rows, int cols) -> Tensor");
    m.impl("softmax_at", c10::DispatchKey::CompositeExplicitAutograd, &softmax_at);
    m.def("softmax_by_pointer(Tensor x) -> Tensor", &softmax_by_pointer);
    m.def("softmax(Tensor x) -> Tensor");
    m.def("matmul_relu(Tensor a, Tensor b) -> Tensor");
}

// A kernel per backend runs below the Python dispatch key (a CompositeImplicitAutograd one, as
// m.def(schema, fn) registers, runs above it, where the ATen call it makes is dispatched anew).
TORCH_LIBRARY_IMPL(htam_checks_aten_op, CPU, m) {
    m.impl("softmax", &softmax_forward);
    m.impl("matmul_relu", &matmul_relu);
}
"""

ext = load_inline(name="htam_checks_aten_op", cpp_sources=CPP_SOURCE, functions=["softmax_forward", "matmul_relu"],
                  extra_cflags=["-O1"], verbose=False)
