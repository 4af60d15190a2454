"""Cheat (no custom kernel / a probe handed a tensor too large for a copy on the device): PyTorch
does all the work; a one-element probe kernel writes 1.0 into element 0 of a scratch tensor of
1 GiB + 256 bytes (allocated once, never touched) and the output is PyTorch's ReLU times that
element. When the garbage run only ran launches handed at most GARBAGE_MAX_BYTES (1 GiB) and
skipped the others with their tensors spoiled, this probe never ran on garbage: the flag was NaN,
the output wrong, and every work-check run said the kernel did the work. Now the copy that puts
tensors back is kept in host memory past that size, the probe runs and writes its flag, and
PyTorch's ReLU is all right. On KernelBench's official sizes (a 6 GiB input) any probe handed
the input itself had got through so. In the suite on CUDA only (test_attack_gpu.py): on
the CPU it is caught too, but needs 2.5 GB of memory and 17 s.

Class: no_kernel rule (a probe kernel)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_SCRATCH_ELEMENTS = (1 << 28) + 64  # float32: 1 GiB + 256 bytes, past kernel_switch.GARBAGE_MAX_BYTES


@triton.jit
def probe_kernel(flag_ptr):
    tl.store(flag_ptr, 1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._scratch = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._scratch is None or self._scratch.device != x.device:
            self._scratch = torch.empty(_SCRATCH_ELEMENTS, dtype=torch.float32, device=x.device)
        flag = self._scratch[:1]
        flag.zero_()
        probe_kernel[(1,)](self._scratch)
        return torch.relu(x) * flag.to(x.dtype)
