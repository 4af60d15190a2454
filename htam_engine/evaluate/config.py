"""Evaluation settings: one place for tolerances, trial counts and limits."""

from __future__ import annotations

from dataclasses import dataclass, field

# KernelBench's default tolerances (atol = rtol) by output dtype: src/kernelbench/eval.py,
# get_tolerance_for_precision (torchbench's 1e-4 for float32, 1e-2 for float16 and bfloat16).
# A verdict must agree with KernelBench's on the same kernel, so these are its figures.
DEFAULT_TOLERANCES: dict[str, float] = {
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
    "float64": 1e-5,
}


@dataclass(slots=True)
class EvalConfig:
    backend: str | None = None  # None: detect from the source
    device: str = "cpu"  # cpu | cuda | cuda:N
    timeout_s: float = 300.0  # whole evaluation (compile included)
    correctness_trials: int = 3  # fresh get_inputs() sets
    warmup: int = 3
    trials: int = 30  # timed trials (median reported)
    tolerances: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    check_unseen_shape: bool = True
    # Overrides for the unseen-shape set (None: the sizes only get_inputs reads, each bumped).
    unseen_shape: dict | None = None
    check_other_distribution: bool = True
    time_compile_baseline: bool = True  # torch.compile baseline, where available
    seed: int = 42
    memory_limit_mb: int | None = None  # host address-space limit for the worker
    # torch/OpenMP threads in a CPU worker (None: torch's default). One thread by default:
    # reference and candidate get the same resources, and timings do not swing with the
    # spin-waits of threads that share busy cores.
    cpu_threads: int | None = 1
    overrides: dict = field(default_factory=dict)  # problem --set overrides (already applied to the Problem)
