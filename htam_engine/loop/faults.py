"""Environment faults: results that say the machine lacks something (a CUDA toolchain, a GPU,
a working harness), not that the candidate is bad. The engine records them but never lets
them count against a strategy in memory."""

from __future__ import annotations

from htam_engine.evaluate.result import EvalResult, Status

# The engine's message prefix for an evaluation the harness itself could not carry out.
HARNESS_FAULT = "harness error:"

# What compilers, torch and drivers print when the machine, not the code, is at fault.
_MARKERS = (
    HARNESS_FAULT,
    "CUDA_HOME environment variable is not set",
    "Torch not compiled with CUDA enabled",
    "No CUDA GPUs are available",
    "Found no NVIDIA driver",
    "no CUDA GPU",
    "nvcc: not found",
    "nvcc: command not found",
    "CUDA driver version is insufficient",
)


def environment_fault(result: EvalResult) -> str | None:
    """Why `result` is the environment's fault (one line), or None when it is the candidate's."""
    message = result.diagnostics.message or ""
    if result.status is Status.HARNESS_ERROR:
        return f"environment fault: {message or 'the harness could not evaluate'}"
    text = f"{message}\n{result.diagnostics.log}".lower()
    for marker in _MARKERS:
        if marker.lower() in text:
            return f"environment fault: {marker.rstrip(':')}"
    return None
