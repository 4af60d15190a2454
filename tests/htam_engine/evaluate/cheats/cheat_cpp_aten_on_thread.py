"""Cheat (PyTorch does the work under a custom-kernel claim, on a thread of the extension's own):
a load_inline function that runs at::softmax on a std::thread it starts and joins inside the call.
The dispatch mode the ATen watch pushes on the garbage run is thread-local (as the profiler's
RecordFunction is), so the operator on the other thread is never recorded; the main thread only
waits, so no more than one core is busy and the thread rules see nothing; the built library names
no refused symbol. On garbage the function returns softmax of the garbage, taken for a kernel's own
work; PyTorch computed every value.

Class: no_kernel rule (PyTorch's operators inside an extension, off the watched thread); red-team
pass 12 (aten_watch's docstring names the gap; no test held it)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <thread>
torch::Tensor softmax_rows(torch::Tensor x) {
    torch::Tensor out;
    std::thread t([&] { out = at::softmax(x, 1); });
    t.join();
    return out;
}
"""

ext = load_inline(name="htam_red12_aten_on_thread", cpp_sources=CPP_SOURCE, functions=["softmax_rows"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x)
