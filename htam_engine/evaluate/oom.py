"""What counts as running out of memory, in an exception or in a message from a sandbox: one
predicate for the judge, its reference model and the decision to run an evaluation again alone."""

from __future__ import annotations

import torch

# How an out-of-memory reads in a message. The others: where the caching allocator's report of an
# out-of-memory fails itself, NVML failing to start inside it ("NVML_SUCCESS == DriverAPI::get()->
# nvmlInit_v2_() INTERNAL ASSERT FAILED at CUDACachingAllocator.cpp", seen in sandboxes on an H200
# box with other evaluations beside them; the allocator asks NVML only on its out-of-memory path),
# matched by the file and, should a message lose its "at ...", by the assert.
_OOM_MARKERS = ("out of memory", "cudacachingallocator", "nvmlinit_v2_() internal assert failed")


def out_of_memory_text(text: str) -> bool:
    low = text.lower()
    return any(m in low for m in _OOM_MARKERS)


def is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)) or out_of_memory_text(str(exc))
