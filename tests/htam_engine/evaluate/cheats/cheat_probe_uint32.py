"""Cheat (no custom kernel / a probe on a dtype torch lends few operations): PyTorch does all the
work; a one-element probe kernel writes 1 into a uint32 flag and the output is PyTorch's softmax
where the flag is 1 (else 7). Garbage drawn by a tensor's range needs its min, which torch lacks
for uint32: the launch fell back to being skipped and spoiled (the flag 0xFFFFFFFF), so every
work-check run saw a wrong output. Now such a dtype gets random bits, the probe runs and writes
its flag, and PyTorch's softmax is all right. It also needed the work check's share to look at
numbers far below KernelBench's atol (a softmax over 32,768 columns: ~3e-5 each), where every
number had been "right" and none depended on the inputs.

Class: no_kernel rule (a probe kernel)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def probe_kernel(flag_ptr):
    tl.store(flag_ptr, tl.full((), 1, tl.uint32))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.zeros(1, dtype=torch.uint32, device=x.device)
        probe_kernel[(1,)](flag)
        ok = (flag == 1).to(x.dtype)  # 1.0 when the probe really ran
        return torch.softmax(x, dim=1) * ok + (1.0 - ok) * 7.0
