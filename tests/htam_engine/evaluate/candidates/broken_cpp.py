"""A C++ candidate with a compile error on a known line (main.cpp:3).

It includes the torch header itself (no_implicit_headers) AFTER the faulty line and asks
gcc to stop at the first error, so the failure costs a fraction of a second, not a
full parse of torch's headers.
"""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
// a deliberate error before anything else is parsed
static_assert(undeclared_scale > 0, "scale must be positive");
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor x) { return x * 2; }
"""

_ext = load_inline(
    name="broken_scale",
    cpp_sources=CPP_SOURCE,
    functions=["scale"],
    extra_cflags=["-Wfatal-errors"],
    no_implicit_headers=True,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()

    def forward(self, x):
        return _ext.scale(x)
