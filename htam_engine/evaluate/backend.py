"""Which backend a candidate uses: `cuda`, `triton` or `cpp`, read from its source."""

from __future__ import annotations

import re

from htam_engine.families import Backend

_TRITON = re.compile(r"@\s*triton\.(jit|autotune)|^\s*(import triton|from triton\b)", re.M)
_CUDA = re.compile(r"__global__|cuda_sources\s*=|<<<|#include\s*<cuda")
_CPP = re.compile(r"load_inline|cpp_extension|cpp_sources\s*=")


def detect_backend(code: str) -> str | None:
    """The backend the source implies, or None when it shows no kernel at all.

    CUDA wins over Triton when both appear (a CUDA extension that also imports triton
    for a helper is still compiled with nvcc); C++ is load_inline without CUDA sources.
    """
    if _CUDA.search(code):
        return Backend.CUDA.value
    if _TRITON.search(code):
        return Backend.TRITON.value
    if _CPP.search(code):
        return Backend.CPP.value
    return None


def resolve_backend(code: str, requested: str | None, device: str) -> str:
    """`requested` when given (validated), else the detected backend, else a device default."""
    if requested:
        value = requested.lower()
        if value not in {b.value for b in Backend}:
            raise ValueError(f"unknown backend {requested!r} (choose cpp, cuda or triton)")
        return value
    found = detect_backend(code)
    if found:
        return found
    return Backend.CPP.value if device == "cpu" else Backend.CUDA.value
