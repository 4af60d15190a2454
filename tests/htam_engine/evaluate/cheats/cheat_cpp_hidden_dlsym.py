"""Cheat (PyTorch does the work under a custom-kernel claim, past the symbol scan): a load_inline
function that looks up at::cpu::_softmax (the structured CPU kernel, called with no dispatcher
between) with dlsym under a mangled name it decodes at run time (each byte XORed with 0x55), so
the built library holds none of the names the kernel switch refuses (_ZN2at3cpu, _ZN2at6native,
redispatch, ...). No operator is dispatched, so the ATen watch records nothing on the garbage run:
the function's output on garbage is softmax of garbage, which the work check takes for a kernel
computing from what it was handed. PyTorch computed every value.

Class: no_kernel rule (PyTorch's kernels inside an extension, the symbol blacklist evaded at run
time); red-team pass 12."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_NAME = "_ZN2at3cpu8_softmaxERKNS_6TensorElb"
_ENC = ",".join(str(ord(c) ^ 0x55) for c in _NAME)

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <dlfcn.h>
using Fn = at::Tensor (*)(const at::Tensor&, int64_t, bool);
static const unsigned char ENC[] = {%s};
torch::Tensor softmax_rows(torch::Tensor x) {
    static Fn fn = nullptr;
    if (!fn) {
        char name[sizeof(ENC) + 1];
        for (size_t i = 0; i < sizeof(ENC); ++i) name[i] = (char)(ENC[i] ^ 0x55);
        name[sizeof(ENC)] = 0;
        fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
        TORCH_CHECK(fn, "not found");
    }
    return fn(x.contiguous(), 1, false);
}
""" % _ENC

ext = load_inline(name="htam_red12_hidden_dlsym", cpp_sources=CPP_SOURCE, functions=["softmax_rows"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x)
