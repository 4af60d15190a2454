"""Retrieval: the local strategies under the chosen direction, ranked by fit and record.

score(strategy | state) = fit + record, where
  fit    = family match (+0.6 listed, −0.4 not listed, +0.2 when the strategy lists none)
         + status match (+0.4 listed, −0.2 not listed, 0 when none listed)
         − 1.0 when the strategy lists backends and the state's backend is not among them
  record = gain_ctx / (tries_ctx + 2) + 0.5 · gain_all / (tries_all + 4) + 0.3 · (rate − 0.5),
           ctx = this family and backend, rate = (successes + 1) / (tries + 2)
(record shrinks toward 0 while a strategy has few tries). The notes are those of the
transition edges the selection attended over (or every edge into the direction).
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_engine.memory.graph import HTG
from htam_engine.memory.types import Retrieval, Selection, State, StrategyView, TransitionNote

NOTES_PER_EDGE = 4  # prior notes plus the most recent learned/veto ones


@dataclass(frozen=True, slots=True)
class Match:
    """A state's values as strategy attributes name them; built once when many strategies are scored."""

    family: str
    status: str
    backend: str
    ctx: str  # the key of a strategy's per-context record: "family|backend"

    @classmethod
    def of(cls, state: "State | Match") -> "Match":
        if isinstance(state, Match):
            return state
        fam, bk = state.family.value, state.backend.value
        return cls(family=fam, status=state.status, backend=bk, ctx=f"{fam}|{bk}")


def applies(attrs: dict, state: State | Match) -> bool:
    """Whether a strategy is meant for this state: every list it gives (families, statuses,
    backends) names the state's value; an empty list means any."""
    m = Match.of(state)
    fams, sts, bks = attrs["families"], attrs["states"], attrs["backends"]
    return (not fams or m.family in fams) and (not sts or m.status in sts) and (not bks or m.backend in bks)


def fit(attrs: dict, state: State | Match) -> float:
    m = Match.of(state)
    f = 0.0
    fams = attrs["families"]
    f += (0.6 if m.family in fams else -0.4) if fams else 0.2
    sts = attrs["states"]
    if sts:
        f += 0.4 if m.status in sts else -0.2
    bks = attrs["backends"]
    if bks and m.backend not in bks:
        f -= 1.0
    return f


def record(attrs: dict, state: State | Match) -> float:
    ctx = attrs["ctx"].get(Match.of(state).ctx)
    tries, succ, gain = attrs["tries"], attrs["successes"], attrs["gain_sum"]
    r = 0.5 * gain / (tries + 4) + 0.3 * ((succ + 1) / (tries + 2) - 0.5)
    if ctx:
        r += ctx[2] / (ctx[0] + 2)
    return r


def rank_strategies(htg: HTG, ids: list[str], state: State) -> list[StrategyView]:
    scored = []
    m = Match.of(state)
    for i, sid in enumerate(ids):
        a = htg.strategy_attrs(sid)
        fi = fit(a, m)
        scored.append((-(fi + record(a, m)), i, sid, fi))
    scored.sort()
    return [htg.view(sid, fit=fi, score=-neg) for neg, _, sid, fi in scored]


def _edge_notes(htg: HTG, a: str, b: str) -> list[TransitionNote]:
    notes = htg.notes(a, b)
    prior = [n for n in notes if n.source == "prior"]
    learned = [n for n in notes if n.source != "prior"]
    return (prior + learned[::-1])[:NOTES_PER_EDGE]


def retrieve(htg: HTG, direction: str, state: State, *, k: int | None = 3, ablation: str | None = None,
             selection: Selection | None = None, from_directions: list[str] | None = None) -> Retrieval:
    """Top-k strategies for the direction (k None: all, ranked); under ablation "flat" the top k
    of every direction's strategies."""
    if ablation == "flat":
        return Retrieval(direction=direction, strategies=rank_strategies(htg, htg.strategy_ids(), state)[:k], notes=[])
    ranked = rank_strategies(htg, htg.strategy_ids(direction), state)[:k]
    if from_directions is None and selection is not None:
        win = next((s for s in selection.scores if s.direction == direction), None)
        from_directions = [t.from_direction for t in win.terms] if win else []
    if from_directions is None:
        from_directions = list(htg.g.predecessors(direction))
    notes: list[TransitionNote] = []
    seen = set()
    for a in from_directions:
        if a in seen:
            continue
        seen.add(a)
        notes.extend(_edge_notes(htg, a, direction))
    return Retrieval(direction=direction, strategies=ranked, notes=notes)
