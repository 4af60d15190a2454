"""The stages of one evaluation: one vocabulary for the judge, the timeouts, progress and views.

A str enum, so `stage == "compile"` keeps working where a plain string was compared.
Harness stages (waiting for the device, building the shared precompiled header, preparing
the baselines) do not count against the candidate's timeout, up to a cap each.
"""

from __future__ import annotations

from enum import Enum


class Stage(str, Enum):
    START = "start"  # the request is on its way to the judge
    STATIC = "static"  # static checks of the source, in the engine
    COMPILE = "compile"  # the sandbox builds and imports the candidate
    PCH = "pch"  # within compile: the shared precompiled torch header is built once
    WAIT_LOCK = "wait_lock"  # waiting for units of device memory or the device's timing lock
    CHECK = "check"  # correctness and integrity calls
    BASELINE = "baseline"  # the reference sandbox builds, compiles and warms the baselines
    TIME = "time"  # timed rounds: candidate, eager and torch.compile, interleaved
    DONE = "done"

    def __str__(self) -> str:
        return self.value

    @property
    def pause_cap_s(self) -> float | None:
        """Seconds of this stage that do not count against the candidate's timeout (None: all count)."""
        return _HARNESS_CAPS.get(self)


_HARNESS_CAPS: dict[Stage, float] = {Stage.WAIT_LOCK: 3600.0, Stage.BASELINE: 1800.0, Stage.PCH: 1800.0}


def parse_stage(value: object) -> Stage | None:
    """The Stage a message names, or None for anything else."""
    try:
        return Stage(value)
    except ValueError:
        return None
