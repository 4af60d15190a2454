"""What the worker hands the checks, and what the checks hand back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import Finding, Mismatch, Status

if TYPE_CHECKING:  # only for annotations: guards import torch lazily
    from htam_engine.evaluate.checks.guards import Guards


@dataclass(slots=True)
class CheckContext:
    """Everything check_candidate needs, built by the worker after the candidate imports.

    instance: a ProblemInstance (htam_engine.problems.instantiate): .Model, .get_inputs(),
      .get_init_inputs(), .namespace; get_inputs() already yields tensors on `device`.
    make_variant: rebuilds the problem under other overrides (the unseen-shape set);
      None skips that set.
    unseen_overrides: problems.unseen_shape_overrides(problem); None when the problem has
      no constant that only changes input shapes.
    """

    instance: Any
    model_new_cls: type
    device: str
    config: EvalConfig
    guards: "Guards"
    make_variant: Callable[[dict], Any] | None = None
    unseen_overrides: dict | None = None


@dataclass(slots=True)
class CheckReport:
    """The verdict on one candidate plus what the timing stage needs.

    status: OK, INCORRECT, REJECTED or RUNTIME_ERROR (REJECTED wins over INCORRECT).
    correct: True only when status is OK.
    mismatch: the first output mismatch seen (which input set, worst element, shapes, dtypes).
    findings: every integrity finding, warnings included.
    message: one line saying what went wrong ("" when OK).
    ref_model / new_model: the instances to time, constructed under the same seed.
    timing_inputs: a fresh get_inputs() set on the device, for timing (never shown to checks).
    """

    status: Status
    correct: bool
    mismatch: Mismatch | None = None
    findings: list[Finding] = field(default_factory=list)
    message: str = ""
    ref_model: Any = None
    new_model: Any = None
    timing_inputs: list = field(default_factory=list)
