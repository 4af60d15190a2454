"""Memory update after an evaluated step, as a replayable delta.

update() computes the reward, builds a delta (plain data) and applies it with apply_delta();
the session stores the delta, so memory_initial + deltas of steps 1..k is the HTG after step k,
and merging a session into a bank is replaying its deltas there (counts add up).

Delta layout (version 1):
  {"v": 1, "session": id, "step": k, "reward": r, "status": s,
   "transitions": [[from, to, bucket, count, successes, reward_sum, reward_sq]],
   "strategies": [[id, "family|backend", tries, successes, gain, when]],
   "notes": [[from, to, {"when","why","risk","source","session","step"}]],
   "added": [{"id","direction","title","description","pitfalls","template","families","backends","states","source"}]}
"""

from __future__ import annotations

import math
import time
from typing import Any

from htam_engine.evaluate.result import Status
from htam_engine.families import ProposalOutcome
from htam_engine.memory.graph import HTG, START, USES_KEPT
from htam_engine.memory.types import HistoryEntry, State, StrategyView

DELTA_VERSION = 1
# Reward of a step that produced no usable result, by status (one place).
PENALTIES: dict[str, float] = {
    Status.COMPILE_ERROR.value: -1.0,
    Status.RUNTIME_ERROR.value: -1.0,
    Status.REJECTED.value: -1.0,
    Status.INCORRECT.value: -0.8,
    Status.TIMEOUT.value: -0.8,
    "vetoed": -0.5,
    "failed": -0.5,  # the proposer produced no candidate
    # the proposer said why it wrote nothing: the direction's moves had nothing left to change
    # from the current best, or none of them changes this problem (a wasted step, not a fault)
    ProposalOutcome.EXHAUSTED.value: -0.3,
    ProposalOutcome.NO_MOVE.value: -0.3,
    "skipped": 0.0,
}
REWARD_CLAMP = 2.0
# A correct candidate, however slow, is worth more than any failure: its reward stays above the
# mildest failure penalty (a slow but correct kernel is a baseline to build on).
OK_FLOOR = -0.4
NOTABLE = 0.3  # |reward| at or above this leaves a learned note on the edge
LEARNED_NOTES_KEPT = 8


def credited(strategies: list[StrategyView], template: str | None) -> list[str]:
    """The retrieved strategies a step's outcome is credited to: those whose template produced it
    (the offline proposer applies one strategy's move), else all of them (a model read them all)."""
    applied = [s.id for s in strategies if template is not None and s.template == template]
    return applied or [s.id for s in strategies]


def proposal_status(outcome: ProposalOutcome | str | None) -> str:
    """The status memory records for a proposal that brought no candidate: the proposer's own
    'nothing left to change' / 'no move here' (a wasted step), else a failure."""
    known = {ProposalOutcome.EXHAUSTED.value, ProposalOutcome.NO_MOVE.value}
    value = outcome.value if isinstance(outcome, ProposalOutcome) else outcome
    return value if value in known else "failed"


def compute_reward(prev_speedup: float | None, new_speedup: float | None, status: str | Status) -> float:
    """log(new / prev) for a correct candidate (prev defaults to eager = 1), within
    [OK_FLOOR, REWARD_CLAMP]; a failure gets its status's penalty."""
    s = status.value if isinstance(status, Status) else str(status)
    if s not in ("ok", "faster", "slower"):
        return PENALTIES.get(s, -0.5)
    if new_speedup is None or not math.isfinite(new_speedup) or new_speedup <= 0:
        return PENALTIES["failed"]
    prev = prev_speedup if prev_speedup is not None and math.isfinite(prev_speedup) and prev_speedup > 0 else 1.0
    return max(OK_FLOOR, min(REWARD_CLAMP, math.log(new_speedup / prev)))


def _status_str(status: str | Status) -> str:
    return status.value if isinstance(status, Status) else str(status)


def update(htg: HTG, *, history: list[HistoryEntry], state: State, direction: str, strategies: list[str],
           status: str | Status, prev_speedup: float | None, new_speedup: float | None, family, backend,
           veto_reason: str | None = None, session_id: str = "", step: int = 0,
           ablation: str | None = None, now: float | None = None) -> dict[str, Any]:
    """Record one step's outcome (state = the state the direction was chosen in); returns the delta."""
    st = "vetoed" if veto_reason is not None else _status_str(status)  # a veto counts as a failure
    reward = compute_reward(prev_speedup, new_speedup, st)
    delta: dict[str, Any] = {"v": DELTA_VERSION, "session": session_id, "step": step, "reward": reward,
                             "status": st, "transitions": [], "strategies": [], "notes": [], "added": []}
    if ablation == "no-update":
        delta["ablation"] = ablation
        return delta
    when = time.time() if now is None else now
    success = int(st == "ok" and reward > 0)
    src = history[-1].direction if history else START
    bucket = state.key()
    delta["transitions"].append([src, direction, bucket, 1, success, reward, reward * reward])
    ctx = f"{getattr(family, 'value', family)}|{getattr(backend, 'value', backend)}"
    for sid in strategies:
        if htg.has_strategy(sid):
            delta["strategies"].append([sid, ctx, 1, success, reward, when])
    if veto_reason is not None:
        delta["notes"].append([src, direction, {"when": f"state {bucket}", "why": veto_reason or "vetoed",
                                                "risk": "a person vetoed this move", "source": "veto",
                                                "session": session_id, "step": step}])
    elif abs(reward) >= NOTABLE:
        titles = ", ".join(htg.strategy_attrs(s)["title"] for s in strategies if htg.has_strategy(s)) or direction
        if reward > 0:
            note = {"when": f"state {bucket}", "why": f"{titles}: speedup x{math.exp(reward):.2f}", "risk": ""}
        else:
            note = {"when": f"state {bucket}", "why": "", "risk": f"{titles}: {st}, reward {reward:+.2f}"}
        delta["notes"].append([src, direction, {**note, "source": "learned", "session": session_id, "step": step}])
    apply_delta(htg, delta)
    return delta


def record_lesson(htg: HTG, delta: dict[str, Any], *, direction: str, title: str, description: str,
                  pitfalls: str = "", template: str | None = None, families=(), backends=(), states=()) -> str:
    """Add a distilled local strategy (deduplicated) and record it in the step's delta; returns its id."""
    known = set(htg.strategy_ids(direction))
    sid = htg.add_strategy(direction, title, description, pitfalls, template, source="learned",
                           families=families, backends=backends, states=states)
    if sid not in known:
        delta.setdefault("added", []).append({
            "id": sid, "direction": direction, "title": title, "description": description, "pitfalls": pitfalls,
            "template": template, "families": list(families), "backends": list(backends), "states": list(states),
            "source": "learned"})
    return sid


def upgrade_from_seed(htg: HTG) -> HTG:
    """A bank made from an older seed gets what the shipped seed has since added: strategies it lacks
    (by id, with no experience yet) and the current move and families of each seed strategy it holds
    (moves are renamed as the offline proposer's design space changes, and a move is meant only for
    the families it applies to). Learned records are kept as they are."""
    seed = HTG.seed()
    known = set(htg.directions())
    for sid in seed.strategy_ids():
        a = seed.strategy_attrs(sid)
        if a["direction"] not in known:
            continue
        if htg.has_strategy(sid):
            mine = htg.strategy_attrs(sid)
            if mine["source"] == "seed":
                mine["template"] = a["template"]
                htg.set_strategy_families(sid, a["families"])
        else:
            htg.add_strategy(a["direction"], a["title"], a["description"], a["pitfalls"], a["template"], source="seed",
                             families=a["families"], backends=a["backends"], states=a["states"], id=sid)
    return htg


def apply_delta(htg: HTG, delta: dict[str, Any]) -> None:
    """Apply a delta from update(); unknown directions/strategies in it are skipped."""
    for s in delta.get("added") or ():
        if s["direction"] in htg.directions():
            htg.add_strategy(s["direction"], s["title"], s["description"], s.get("pitfalls", ""), s.get("template"),
                             source=s.get("source", "learned"), families=s.get("families", ()),
                             backends=s.get("backends", ()), states=s.get("states", ()), id=s["id"])
    dirs = set(htg.directions())
    for a, b, bucket, n, succ, rs, rq in delta.get("transitions") or ():
        if b in dirs and (a == START or a in dirs):
            htg.add_transition(a, b, bucket, n, succ, rs, rq)
    session, step = delta.get("session", ""), delta.get("step", 0)
    for sid, ctx, tries, succ, gain, when in delta.get("strategies") or ():
        if not htg.has_strategy(sid):
            continue
        a = htg.strategy_attrs(sid)
        a["tries"] += tries
        a["successes"] += succ
        a["gain_sum"] += gain
        c = a["ctx"].setdefault(ctx, [0, 0, 0.0])
        c[0] += tries
        c[1] += succ
        c[2] += gain
        a["last_used"] = max(a["last_used"], when)
        a["uses"].append([session, step, gain])
        del a["uses"][:-USES_KEPT]
    for a, b, note in delta.get("notes") or ():
        if b in dirs and (a == START or a in dirs):
            htg.add_note(a, b, note)
            _prune_notes(htg.edge(a, b)["notes"])


def _prune_notes(notes: list[dict]) -> None:
    """Keep every prior note and the most recent LEARNED_NOTES_KEPT learned/veto notes."""
    learned = [i for i, n in enumerate(notes) if n.get("source") != "prior"]
    for i in reversed(learned[:-LEARNED_NOTES_KEPT]):
        del notes[i]
