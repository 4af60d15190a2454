"""Not a candidate: the C++ extension cheat_cpp_op_python_impl and cheat_cpp_python_callback
share, written once between them (each candidate still builds it under its own key: the build cache is
keyed by the whole candidate source); each includes it with a line `# include: ext_python_inside`
(harness.candidate_source)."""

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _disable_current_modes  # noqa: F401 - the candidates' own Python uses it
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor call_back(torch::Tensor x, py::object f) {
    return f(x).cast<torch::Tensor>();
}

TORCH_LIBRARY(htam_checks_python_inside, m) {
    m.def("softmax(Tensor x) -> Tensor");
}
"""

ext = load_inline(name="htam_checks_python_inside", cpp_sources=CPP_SOURCE, functions=["call_back"],
                  extra_cflags=["-O1"], verbose=False)
