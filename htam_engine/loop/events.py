"""Typed engine events: everything a front end shows, so no front end re-derives engine state.

Every event carries the step it belongs to (0 before the first step). A decision request
travels inside `ApprovalRequested` with the handle that resolves it; the open requests, as
the engine holds them, ride on every approval and decision event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from htam_engine.evaluate.result import EvalResult
from htam_engine.loop.approval import DecisionRequest
from htam_engine.memory.types import Retrieval, Selection, State
from htam_engine.propose.base import Usage
from htam_engine.session.model import Decision


class RunState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    PAUSING = "pausing"  # asked to pause: the step under way finishes first
    PAUSED = "paused"
    STOPPING = "stopping"
    FINISHED = "finished"  # the budget is spent (an app's run waits here for a larger one)


@dataclass(slots=True)
class Event:
    kind: ClassVar[str] = "event"
    step: int = 0


@dataclass(slots=True)
class SessionStarted(Event):
    """The run begins; `step` is the number of steps the session already has, and `history`
    their events (as they were recorded), so a resumed session shows what it did."""

    kind: ClassVar[str] = "session_started"
    session_path: str = ""
    problem_id: str = ""
    backend: str = ""
    device: str = ""
    policy: str = ""
    proposer: str = ""
    steps_planned: int = 0
    history: list[Event] = field(default_factory=list)


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
    request: DecisionRequest | None = None
    pending: tuple[DecisionRequest, ...] = ()  # every open request, this one included, oldest first


@dataclass(slots=True)
class DecisionMade(Event):
    kind: ClassVar[str] = "decision_made"
    sample: int = 0
    decision: Decision | None = None
    pending: tuple[DecisionRequest, ...] = ()  # the requests still open after this decision


@dataclass(slots=True)
class EvaluationProgress(Event):
    """Stage changes and live per-trial timings; coalescable."""

    kind: ClassVar[str] = "evaluation_progress"
    sample: int = 0
    stage: str = ""  # the harness's stage name (static, compile, check, time, ...)
    stage_started: float = 0.0  # time.time() when the stage began (a front end shows the elapsed time)
    timings: list[float] = field(default_factory=list)


@dataclass(slots=True)
class EvaluationFinished(Event):
    """A candidate's result; sample -1 is a re-evaluation of the best, not a step's candidate."""

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
    status: str = ""  # the step's outcome as `htam sessions show` names it
    step_speedup: float | None = None  # the fastest correct candidate of this step
    best_speedup: float | None = None  # the session's best after this step
    improved: bool = False
    best_code: str | None = None  # the session's best candidate after this step
    usage: Usage = field(default_factory=Usage)  # the session's model usage after this step


@dataclass(slots=True)
class EngineStateChanged(Event):
    kind: ClassVar[str] = "engine_state"
    state: RunState = RunState.STARTING
    detail: str = ""


@dataclass(slots=True)
class PlanChanged(Event):
    """The step budget or the policy changed (a person's command, or approve-all)."""

    kind: ClassVar[str] = "plan_changed"
    steps_planned: int = 0
    policy: str = ""


@dataclass(slots=True)
class EngineError(Event):
    kind: ClassVar[str] = "error"
    message: str = ""
    where: str = ""


@dataclass(slots=True)
class SessionFinished(Event):
    kind: ClassVar[str] = "session_finished"
    reason: str = ""  # steps | tokens | cost | target | stopped
    best: EvalResult | None = None
