"""Records the HTG memory produces and consumes; read by the loop, proposers, sessions and UI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from htam_engine.families import Backend, Bottleneck, Family


@dataclass(slots=True, frozen=True)
class State:
    """Coarse state of the current best candidate (DESIGN.md step 1)."""

    status: str  # "start" (no candidate yet) or an evaluate.result.Status value or "slower"/"faster"
    family: Family
    bottleneck: Bottleneck
    speedup_bucket: str  # e.g. "none", "<0.5", "0.5-1", "1-1.5", "1.5-2", ">2"
    backend: Backend

    def key(self) -> str:
        """Bucket key used for per-state statistics on edges."""
        return f"{self.status}|{self.family.value}|{self.bottleneck.value}|{self.speedup_bucket}"


@dataclass(slots=True)
class TransitionTerm:
    """Contribution of one history entry to one candidate direction's score."""

    k: int  # 1 = the most recent step
    from_direction: str
    position_weight: float
    similarity: float
    edge_value: float
    contribution: float


@dataclass(slots=True)
class DirectionScore:
    direction: str
    total: float
    transition: float
    prior: float
    exploration: float
    terms: list[TransitionTerm] = field(default_factory=list)
    probability: float | None = None  # under temperature sampling


@dataclass(slots=True)
class Selection:
    """Why a direction won: every term, for the UI and the session log."""

    direction: str
    scores: list[DirectionScore]  # all candidates, best first
    mode: str  # "argmax" | "sample" | "random" | "forced" | ablation name
    ablation: str | None = None
    reason: str = ""  # one-line human summary


@dataclass(slots=True)
class StrategyView:
    id: str
    direction: str
    title: str
    description: str
    pitfalls: str = ""
    template: str | None = None  # offline proposer template id
    tries: int = 0
    successes: int = 0
    mean_gain: float = 0.0
    fit: float = 0.0  # applicability score for the current state
    score: float = 0.0


@dataclass(slots=True)
class TransitionNote:
    from_direction: str
    to_direction: str
    when: str = ""
    why: str = ""
    risk: str = ""
    source: str = "prior"  # prior | learned | veto


@dataclass(slots=True)
class Retrieval:
    direction: str
    strategies: list[StrategyView]
    notes: list[TransitionNote]


@dataclass(slots=True)
class HistoryEntry:
    """One past step as the selector sees it."""

    state: State
    direction: str
    reward: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The step's candidate became the new best (the proposer builds on it from then on).
    # False: the step was tried on the best before it and did not improve it.
    improved: bool = True
    # The proposer had no move of this direction for the problem's code (ProposalOutcome.NO_MOVE):
    # the direction is not picked again in the session (select.barred).
    no_move: bool = False


@dataclass(slots=True)
class TransitionRow:
    """One direction -> direction edge as the memory browser shows it."""

    from_direction: str
    to_direction: str
    count: int = 0
    successes: int = 0
    mean_reward: float = 0.0
    prior_value: float = 0.0  # expert prior value of the move (seed notes)
    buckets: int = 0  # how many state buckets hold experience
    notes: list[TransitionNote] = field(default_factory=list)
