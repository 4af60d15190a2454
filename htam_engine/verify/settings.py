"""KernelBench's evaluation choices, the ones `htam verify` passes to its eval_kernel_against_ref
and mirrors in htam's own evaluation. One place, so the help text, the child and the report agree."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any


class TimingMethod(str, Enum):
    """KernelBench's timing.get_timing_function names (its scripts use cuda_event)."""

    CUDA_EVENT = "cuda_event"
    DO_BENCH = "do_bench"
    HOST_TIME = "host_time"


class Precision(str, Enum):
    """KernelBench's precision names (get_torch_dtype_from_string)."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"


# Two speedups agree when they differ by at most this share of KernelBench's.
AGREEMENT = 0.03


@dataclass(frozen=True, slots=True)
class KernelBenchSettings:
    """Defaults are those of KernelBench's scripts (eval_from_generations.py,
    generate_and_eval_single_sample.py): 5 correctness trials, 100 timed trials, CUDA events,
    fp32, seed 42, and the reference timed in the same call (check_for_excessive_speedup)."""

    seed: int = 42
    correct_trials: int = 5
    perf_trials: int = 100
    timing_method: TimingMethod = TimingMethod.CUDA_EVENT
    precision: Precision = Precision.FP32
    timeout_s: float = 900.0  # each of the two evaluations, compile included

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["timing_method"], d["precision"] = self.timing_method.value, self.precision.value
        return d
