"""Typed engine events. The UI renders them; sessions record them; tests assert on them.

Every event carries the step it belongs to (0 for session-level events).
`to_dict`/`event_from_dict` give the msgpack-able form sessions store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from htam_engine.evaluate.result import EvalResult
from htam_engine.memory.types import Retrieval, Selection, State


@dataclass(slots=True)
class Event:
    kind: ClassVar[str] = "event"
    step: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["kind"] = self.kind
        return d


@dataclass(slots=True)
class SessionStarted(Event):
    kind: ClassVar[str] = "session_started"
    session_path: str = ""
    problem_id: str = ""
    steps_planned: int = 0


@dataclass(slots=True)
class StepStarted(Event):
    kind: ClassVar[str] = "step_started"
    state: State | None = None


@dataclass(slots=True)
class DirectionSelected(Event):
    kind: ClassVar[str] = "direction_selected"
    selection: Selection | None = None


@dataclass(slots=True)
class StrategiesRetrieved(Event):
    kind: ClassVar[str] = "strategies_retrieved"
    retrieval: Retrieval | None = None


@dataclass(slots=True)
class TokensStreamed(Event):
    """Model text; high rate, so the bus may coalesce consecutive ones (text concatenates)."""

    kind: ClassVar[str] = "tokens_streamed"
    sample: int = 0
    text: str = ""


@dataclass(slots=True)
class CandidateProposed(Event):
    kind: ClassVar[str] = "candidate_proposed"
    sample: int = 0
    code: str | None = None
    failure: str = ""


@dataclass(slots=True)
class ApprovalRequested(Event):
    kind: ClassVar[str] = "approval_requested"
    sample: int = 0
    request_id: str = ""
    code: str = ""
    previous_code: str | None = None
    result: EvalResult | None = None  # set when the policy evaluates first
    pending: int = 1  # decisions queued, this one included


@dataclass(slots=True)
class DecisionMade(Event):
    kind: ClassVar[str] = "decision_made"
    sample: int = 0
    request_id: str = ""
    action: str = ""  # approve | veto | edit | skip
    reason: str = ""
    by: str = ""  # "person" | policy name


@dataclass(slots=True)
class EvaluationProgress(Event):
    """Stage changes and live per-trial timings; coalescable."""

    kind: ClassVar[str] = "evaluation_progress"
    sample: int = 0
    stage: str = ""  # static | compile | correctness | timing
    timings: list[float] = field(default_factory=list)


@dataclass(slots=True)
class EvaluationFinished(Event):
    kind: ClassVar[str] = "evaluation_finished"
    sample: int = 0
    result: EvalResult | None = None


@dataclass(slots=True)
class MemoryUpdated(Event):
    kind: ClassVar[str] = "memory_updated"
    reward: float = 0.0
    direction: str = ""
    new_strategy: str | None = None


@dataclass(slots=True)
class SessionSaved(Event):
    kind: ClassVar[str] = "session_saved"
    path: str = ""
    steps_saved: int = 0


@dataclass(slots=True)
class StepFinished(Event):
    kind: ClassVar[str] = "step_finished"
    best_speedup: float | None = None
    improved: bool = False


@dataclass(slots=True)
class EngineStateChanged(Event):
    kind: ClassVar[str] = "engine_state"
    state: str = ""  # running | paused | stopping | finished
    detail: str = ""


@dataclass(slots=True)
class EngineError(Event):
    kind: ClassVar[str] = "error"
    message: str = ""
    where: str = ""


@dataclass(slots=True)
class SessionFinished(Event):
    kind: ClassVar[str] = "session_finished"
    reason: str = ""  # steps | tokens | cost | target | stopped | error
    best: EvalResult | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        SessionStarted, StepStarted, DirectionSelected, StrategiesRetrieved, TokensStreamed,
        CandidateProposed, ApprovalRequested, DecisionMade, EvaluationProgress,
        EvaluationFinished, MemoryUpdated, SessionSaved, StepFinished, EngineStateChanged,
        EngineError, SessionFinished,
    )
}


def event_field_names(cls: type[Event]) -> list[str]:
    return [f.name for f in fields(cls)]
