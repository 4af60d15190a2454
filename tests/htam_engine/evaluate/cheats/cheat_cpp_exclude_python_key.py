"""Cheat (PyTorch does the work under a custom-kernel claim, the gap kernel_switch names): a
load_inline function that calls at::softmax under c10::impl::ExcludeDispatchKeyGuard for the
Python and PythonTLSSnapshot keys. The dispatch mode the ATen watch pushes on the garbage run sits
behind the Python key, so it records no operator; the symbol scan cannot refuse the guard's name
(every TORCH_LIBRARY registration names it too). On garbage the function returns softmax of the
garbage, taken for a kernel's own work; PyTorch computed every value.

Class: no_kernel rule (PyTorch's operators inside an extension, below the Python key); red-team
pass 12 (kernel_switch's comment says it gets through; no test held it)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
torch::Tensor softmax_rows(torch::Tensor x) {
    c10::impl::ExcludeDispatchKeyGuard guard(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    return at::softmax(x, 1);
}
"""

ext = load_inline(name="htam_red12_exclude_python_key", cpp_sources=CPP_SOURCE, functions=["softmax_rows"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x)
