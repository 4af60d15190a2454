"""Cheat (disk): an honest kernel that also leaves 256 MB behind in its own build folder of the cache
(beside every later sandbox's extension builds; the one folder of them a sandbox may write:
zygote.confine_build). Nothing
bounded what a sandbox may write or cleaned up after it; repeated, this fills the disk under every
later evaluation.

Class: resource limits (disk)."""

import os
from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl

# this file is <cache>/candidates/candidate_<key>.py: its own build folder is <cache>/build/<key>
KEY = Path(__file__).stem.split("_", 1)[1]
JUNK = Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "build" / KEY / "junk.bin"
with open(JUNK, "wb") as fh:
    block = b"\0" * (1 << 20)
    for _ in range(256):
        fh.write(block)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
