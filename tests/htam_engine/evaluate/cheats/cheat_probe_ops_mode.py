"""Cheat (no custom kernel / the operator gate seen): PyTorch does all the work. The candidate builds
an extension that registers an operator (TORCH_LIBRARY), so the switch pushes a TorchFunctionMode to
gate such operators whenever kernels are not plainly running, and never otherwise. forward asks
torch whether a function mode is active: if so it returns garbage; if not it calls the operator (a
launch is counted) and returns PyTorch's ReLU.

Class: no_kernel rule; the work check's calls told apart in the sandbox (the gate's mode)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
torch::Tensor touch(torch::Tensor x) { return x.new_zeros({1}); }
TORCH_LIBRARY(htam_probe_gate, m) { m.def("touch(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(htam_probe_gate, CPU, m) { m.impl("touch", &touch); }
TORCH_LIBRARY_IMPL(htam_probe_gate, CUDA, m) { m.impl("touch", &touch); }
"""
load_inline("htam_probe_gate_ext", cpp_sources=SRC, functions=["touch"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch._C._is_torch_function_mode_enabled():
            return torch.empty_like(x)
        torch.ops.htam_probe_gate.touch(x)
        return torch.relu(x)
