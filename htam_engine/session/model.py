"""What a session holds. Storage (msgpack, atomic writes, migration) is in session/store.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from htam_engine.evaluate.result import EvalResult
from htam_engine.memory.types import Retrieval, Selection, State
from htam_engine.propose.base import Usage


class Action(StrEnum):
    """What was decided about a candidate."""

    APPROVE = "approve"  # evaluate the code as proposed
    VETO = "veto"  # do not evaluate; the reason goes into memory and the next prompts
    EDIT = "edit"  # evaluate the person's edited code instead
    SKIP = "skip"  # do not evaluate; nothing is learned from it


class Policy(StrEnum):
    """Who approves candidates when no person does."""

    ASK = "ask"
    AUTO = "auto"
    AUTO_STATIC = "auto-static"
    ASK_ON_CHANGE = "ask-on-change"


class Decider(StrEnum):
    """Who made a decision: a person, the stop command (pending candidates are skipped), or a
    policy by its name."""

    PERSON = "person"
    STOP = "stop"
    ASK = Policy.ASK.value
    AUTO = Policy.AUTO.value
    AUTO_STATIC = Policy.AUTO_STATIC.value
    ASK_ON_CHANGE = Policy.ASK_ON_CHANGE.value


@dataclass(slots=True)
class Decision:
    action: Action
    by: Decider
    reason: str = ""
    edited_code: str | None = None

    def __post_init__(self) -> None:
        # plain strings (older callers, decoded files) become the enums; a bad one raises ValueError
        self.action = Action(self.action)
        self.by = Decider(self.by)


@dataclass(slots=True)
class Candidate:
    """One of the k samples of a step."""

    sample: int
    code: str | None
    prompt: str = ""
    model_output: str = ""
    failure: str = ""  # proposer failure (no code)
    template: str | None = None
    decision: Decision | None = None
    result: EvalResult | None = None
    usage: Usage = field(default_factory=Usage)
    outcome: str | None = None  # the proposal's ProposalOutcome value (None in older sessions)


@dataclass(slots=True)
class StepRecord:
    """One finished step. Once saved, a step is not changed in place (saving reuses its packed
    bytes; replacing its candidates, results or decisions with new objects is detected)."""

    step: int  # from 1
    state: State
    selection: Selection
    retrieval: Retrieval
    candidates: list[Candidate]
    chosen: int | None = None  # index of the sample that became this step's outcome
    reward: float = 0.0
    best_speedup: float | None = None  # session best after this step
    started_at: float = 0.0
    finished_at: float = 0.0
    new_strategy: str | None = None
    # What the memory update of this step changed (memory.update's delta); replaying
    # the deltas of steps 1..k over Session.memory_initial gives the HTG after step k.
    memory_delta: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> Candidate | None:
        return None if self.chosen is None else self.candidates[self.chosen]


@dataclass(slots=True)
class SessionConfig:
    """Run settings. Never holds an API key."""

    backend: str = "cpp"
    device: str = "cpu"
    proposer: str = "offline"
    model: str = ""
    base_url: str = ""
    policy: Policy = Policy.AUTO
    steps: int = 6
    samples: int = 1
    seed: int = 0
    ablation: str | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    target_speedup: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.policy = Policy(self.policy)


@dataclass(slots=True)
class ProblemRef:
    id: str
    source: str
    path: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Session:
    id: str
    problem: ProblemRef
    config: SessionConfig
    memory_initial: dict[str, Any]  # HTG snapshot (HTG.to_data()) when the session began
    steps: list[StepRecord] = field(default_factory=list)
    best_code: str | None = None
    best_result: EvalResult | None = None
    best_step: int | None = None
    parent: dict[str, Any] | None = None  # {"session": path-or-id, "step": k}
    created_at: float = 0.0
    updated_at: float = 0.0
    usage: Usage = field(default_factory=Usage)
