"""Timing a forward pass honestly: warm-up, many trials, median.

The clock, CUDA events and synchronize are bound when this module is imported — in
the worker, before any candidate code runs — so a candidate that later patches
`time.perf_counter_ns` or `torch.cuda.synchronize` cannot change what the harness
reads. On CUDA each trial starts from a flushed L2 (a buffer larger than L2 is
rewritten) and all streams of the device are synchronized before and after it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from time import perf_counter_ns as _perf_counter_ns
from typing import Any, Callable, Sequence

import torch

_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_no_grad = torch.no_grad

# A CPU trial loop stops early once it has spent this long (large shapes on a small CPU).
CPU_TIME_BUDGET_S = 10.0
MIN_TRIALS = 5


def is_cuda(device: str) -> bool:
    return device.startswith("cuda")


@dataclass(slots=True)
class TrialTimes:
    ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return statistics.median(self.ms) if self.ms else None


class _L2Flusher:
    """Rewrites a buffer larger than the device's L2 so each trial starts cold."""

    def __init__(self, device: str):
        dev = torch.device(device)
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        l2 = int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or 0)
        size = max(2 * l2, 64 * 1024 * 1024)
        self._buf = torch.empty(size // 4, dtype=torch.float32, device=dev)

    def __call__(self) -> None:
        self._buf.fill_(1.0)


def _run_cpu(fn: Callable[[], Any], trials: int, on_trial: Callable[[float], None] | None,
             refresh: Callable[[int], None]) -> list[float]:
    out: list[float] = []
    spent = 0
    for i in range(trials):
        refresh(i)
        t0 = _perf_counter_ns()
        fn()
        dt = _perf_counter_ns() - t0
        out.append(dt / 1e6)
        spent += dt
        if on_trial:
            on_trial(out[-1])
        if spent / 1e9 > CPU_TIME_BUDGET_S and i + 1 >= MIN_TRIALS:
            break
    return out


def _run_cuda(fn: Callable[[], Any], device: str, trials: int, on_trial: Callable[[float], None] | None,
              refresh: Callable[[int], None]) -> list[float]:
    flush = _L2Flusher(device)
    out: list[float] = []
    for i in range(trials):
        refresh(i)
        flush()
        _synchronize(device)
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        _synchronize(device)  # every stream of the device, not just the current one
        out.append(float(start.elapsed_time(end)))
        if on_trial:
            on_trial(out[-1])
    return out


def time_forward(model: Callable[..., Any], inputs: Sequence[Any], device: str, *, warmup: int, trials: int,
                 on_trial: Callable[[float], None] | None = None,
                 refresh: Callable[[int], None] | None = None) -> TrialTimes:
    """Per-trial milliseconds of `model(*inputs)` under no_grad after `warmup` untimed calls.

    `refresh(i)` runs before trial i, outside the timed region: the harness rewrites the input
    buffers in place with other values there, so a candidate that caches results keyed on the
    input's address or contents gains nothing from a loop that reuses one buffer.
    """
    args = list(inputs)
    refresh = refresh or (lambda i: None)

    def call() -> None:
        model(*args)

    with _no_grad():
        for _ in range(max(0, warmup)):
            call()
        if is_cuda(device):
            _synchronize(device)
            return TrialTimes(_run_cuda(call, device, max(1, trials), on_trial, refresh))
        return TrialTimes(_run_cpu(call, max(1, trials), on_trial, refresh))
