"""The one small interface every proposer implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping, Protocol, runtime_checkable

from htam_engine.evaluate.result import EvalResult
from htam_engine.families import Backend, ProposalOutcome
from htam_engine.memory.types import Retrieval, Selection, State
from htam_engine.problems.model import Problem

# Called with each chunk of model text as it arrives (may be sync or async).
TokenSink = Callable[[str], Awaitable[None] | None]


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
        )


@dataclass(slots=True)
class ProposalRequest:
    problem: Problem
    backend: Backend
    state: State
    selection: Selection
    retrieval: Retrieval
    best_code: str | None = None  # current best candidate source, None at step 1
    best_result: EvalResult | None = None  # its evaluation feedback
    last_result: EvalResult | None = None  # the previous step's evaluation (may be a failure)
    last_code: str | None = None
    last_failure: str = ""  # why the previous step produced no candidate (proposer failure), if it did not
    veto_reasons: list[str] = field(default_factory=list)  # person's reasons from vetoes
    step: int = 1
    sample: int = 0  # index among the k samples of this step
    seed: int = 0
    # candidates the session evaluated or a person vetoed (never proposed again); None: the caller did not say
    proposed: tuple[str, ...] | None = None


@dataclass(slots=True)
class Proposal:
    code: str | None  # the candidate module; None when the proposer could not make one
    prompt: str = ""
    raw_output: str = ""
    failure: str = ""  # why there is no code (step failure reason, goes into memory)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    template: str | None = None  # offline proposer: the id of the move applied (a strategy's template)
    outcome: ProposalOutcome | None = None  # None: CANDIDATE when there is code, ERROR when not
    strategy: str | None = None  # the retrieved strategy whose move produced the code, if one did

    @property
    def kind(self) -> ProposalOutcome:
        if self.outcome is not None:
            return self.outcome
        return ProposalOutcome.CANDIDATE if self.code is not None else ProposalOutcome.ERROR


@dataclass(slots=True)
class Lesson:
    """A reusable lesson distilled after a notable step (becomes a local strategy)."""

    direction: str
    title: str
    description: str
    pitfalls: str = ""


class Proposer(Protocol):
    name: str

    async def propose(self, request: ProposalRequest, on_token: TokenSink | None = None) -> Proposal: ...

    async def reflect(self, request: ProposalRequest, code: str, result: EvalResult) -> Lesson | None: ...


@dataclass(slots=True, frozen=True)
class MoveQuery:
    """What a proposer is asked before a step: which directions would change the code from here."""

    problem: Problem
    backend: Backend
    best_code: str | None
    proposed: tuple[str, ...]  # what the session evaluated or a person vetoed (never proposed again)
    retrievals: Mapping[str, Retrieval]  # per direction: the strategies a step in it would retrieve


@dataclass(frozen=True, slots=True)
class Moves:
    """What a proposer that knows its design space says before a step: the directions with a move
    left, and per direction the strategy whose move its step would apply first (`applies`, where it
    knows). Selection scores a direction by that strategy's record: the step writes its move, not
    the move of another strategy of the direction that has nothing to change in this plan."""

    directions: frozenset[str]
    applies: Mapping[str, str] = field(default_factory=dict)

    def __contains__(self, direction: object) -> bool:
        return direction in self.directions


@runtime_checkable
class KnowsMoves(Protocol):
    """A proposer that can tell ahead which directions have a move left (the offline one: its design
    space is finite). Selection then never spends a step on a direction whose answer is known to be
    NO_MOVE or EXHAUSTED; a model proposer cannot know, and does not implement this."""

    async def movable(self, query: MoveQuery) -> Moves: ...
