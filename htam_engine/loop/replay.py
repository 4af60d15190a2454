"""The step-level events of a saved session, rebuilt from its file.

A run starts by sending these (in `SessionStarted.history`), so a front end opening a
session (resume, a branch) shows what it showed when the steps ran, through the same
folding the live stream goes through. High-rate events (token streams, evaluation progress)
and bookkeeping (saves, engine state) are not stored and not replayed; candidates of a step
come one after the other.
"""

from __future__ import annotations

from htam_engine.loop import events as ev
from htam_engine.propose.base import Usage
from htam_engine.session import candidate_code, step_speedup, step_status
from htam_engine.session.model import Session

# What the replay gives back (and what a live stream holds that a replay can match).
REPLAYED = (
    ev.StepStarted, ev.DirectionSelected, ev.StrategiesRetrieved, ev.CandidateProposed, ev.DecisionMade,
    ev.EvaluationFinished, ev.MemoryUpdated, ev.StepFinished,
)


def session_events(session: Session) -> list[ev.Event]:
    out: list[ev.Event] = []
    best: float | None = None
    best_code: str | None = None
    usage = Usage()
    for rec in session.steps:
        s = rec.step
        out.append(ev.StepStarted(s, state=rec.state))
        if rec.selection.direction:
            out.append(ev.DirectionSelected(s, selection=rec.selection))
            out.append(ev.StrategiesRetrieved(s, retrieval=rec.retrieval))
        for c in rec.candidates:
            usage = usage + c.usage
            out.append(ev.CandidateProposed(s, sample=c.sample, code=c.code, failure=c.failure))
            if c.decision is not None:
                out.append(ev.DecisionMade(s, sample=c.sample, decision=c.decision))
            if c.result is not None:
                out.append(ev.EvaluationFinished(s, sample=c.sample, result=c.result))
        if rec.memory_delta:  # the step taught the memory something
            out.append(ev.MemoryUpdated(s, reward=rec.reward, direction=rec.selection.direction,
                                        new_strategy=rec.new_strategy))
        improved = rec.best_speedup is not None and (best is None or rec.best_speedup > best)
        if improved and rec.outcome is not None:
            best, best_code = rec.best_speedup, candidate_code(rec.outcome)
        out.append(ev.StepFinished(s, status=step_status(rec), step_speedup=step_speedup(rec),
                                   best_speedup=rec.best_speedup, improved=improved, best_code=best_code,
                                   usage=usage))
    return out
