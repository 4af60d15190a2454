"""Cheat (PyTorch does the work under a custom-kernel claim, past the symbol scan and the static
check): cheat_cpp_hidden_dlsym with the lookup moved out of the extension into Python, and done
without ctypes (whose casts the static check refuses, foreign_memory). The address of
at::cpu::_softmax is found in pure Python: libtorch_cpu.so's .dynsym read with struct (an mmap of
the file), plus the library's load base from /proc/self/maps. The extension casts the int it is
handed to a function pointer and calls it: no dlsym, no at::cpu / at::native name in the .so, no
operator dispatched, no ctypes import. On garbage its output is softmax of the garbage, which the
work check takes for the kernel's own work.

Class: no_kernel rule (PyTorch's CPU kernel inside an extension, address handed in from Python);
red-team pass 23."""

import mmap
import os
import struct

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
using Fn = at::Tensor (*)(const at::Tensor&, int64_t, bool);
torch::Tensor softmax_rows(torch::Tensor x, int64_t impl) {
    return reinterpret_cast<Fn>(impl)(x.contiguous(), 1, false);
}
"""
ext = load_inline(name="htam_red23_elf_address", cpp_sources=CPP_SOURCE, functions=["softmax_rows"],
                  extra_cflags=["-O1"], verbose=False)


def _address(lib: str, name: bytes) -> int:
    with open(lib, "rb") as f:
        d = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    sym = next(s for s in secs if s[1] == 11)  # .dynsym
    strs = secs[sym[6]][4]
    for off in range(sym[4], sym[4] + sym[5], sym[9]):
        st_name, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", d, off)
        if d[strs + st_name:strs + st_name + len(name) + 1] == name + b"\0":
            break
    d.close()  # our own mapping of the file is gone from /proc/self/maps: only the loaded library's remain
    base = min(int(l.split("-")[0], 16) for l in open("/proc/self/maps") if l.rstrip().endswith(lib)
                and l.split()[2] == "00000000")
    return base + value


_LIB = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
_ADDR = _address(_LIB, b"_ZN2at3cpu8_softmaxERKNS_6TensorElb")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_rows(x, _ADDR)
