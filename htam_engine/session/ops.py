"""Session operations: start, append a step, replay memory, branch, export, summarize, list."""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from pathlib import Path
from typing import Any

from htam_engine.errors import UsageError
from htam_engine.evaluate.result import EvalResult
from htam_engine.families import ProposalOutcome
from htam_engine.memory.graph import HTG
from htam_engine.memory.learn import apply_delta
from htam_engine.memory.types import HistoryEntry
from htam_engine.problems.model import Problem
from htam_engine.propose.base import Usage
from htam_engine.propose.redact import redact
from htam_engine.session import codec
from htam_engine.session.model import Action, Candidate, Decider, Decision, ProblemRef, Session, SessionConfig, StepRecord
from htam_engine.session.paths import SESSION_SUFFIX, sessions_dir
from htam_engine.session.store import SessionFileError, best_speedup, load_session, read_meta, save_session


class SessionError(Exception):
    """A session operation that cannot be done (exit 1): e.g. nothing to export."""


class StepRangeError(SessionError, UsageError):
    """A step number the session does not have (exit 2, like other bad usage)."""


def new_session_id(problem_id: str) -> str:
    stem = "".join(ch if ch.isalnum() else "-" for ch in problem_id.split("/")[-1].split(":")[-1]).strip("-")
    return f"{stem[:40] or 'session'}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def new_session(problem: Problem, config: SessionConfig, memory: HTG, path: str | os.PathLike | None = None) -> Session:
    """A session starting from this memory (its snapshot is stored); saved at path when given."""
    now = time.time()
    # Never an API key in a session: a key registered with the proposer, or a password in the
    # endpoint URL, is masked before the config is stored.
    config = dataclasses.replace(config, base_url=redact(config.base_url) if config.base_url else "")
    s = Session(id=new_session_id(problem.id),
                problem=ProblemRef(id=problem.id, source=problem.source, path=problem.path,
                                   overrides=dict(problem.overrides)),
                config=config, memory_initial=memory.to_data(), created_at=now, updated_at=now)
    if path is not None:
        save_session(s, path)
    return s


def candidate_code(c: Candidate) -> str | None:
    """The code that was evaluated: the person's edit when there was one."""
    if c.decision is not None and c.decision.edited_code:
        return c.decision.edited_code
    return c.code


def _better(r: EvalResult | None, than: float | None) -> bool:
    return (r is not None and r.ok and r.correct and r.speedup_eager is not None
            and (than is None or r.speedup_eager > than))


def record_step(session: Session, rec: StepRecord, path: str | os.PathLike | None = None) -> bool:
    """Append a finished step, update the best candidate, save when path is given; True if improved."""
    if rec.step != len(session.steps) + 1:
        raise SessionError(f"step {rec.step} does not follow step {len(session.steps)}")
    session.steps.append(rec)
    out = rec.outcome
    improved = out is not None and _better(out.result, best_speedup(session))
    if improved:
        session.best_code, session.best_result, session.best_step = candidate_code(out), out.result, rec.step
    rec.best_speedup = best_speedup(session)
    for c in rec.candidates:
        session.usage = session.usage + c.usage
    if path is not None:
        save_session(session, path)
    return improved


def history_of(session: Session) -> list[HistoryEntry]:
    """The selector's history: each step that chose a direction, its state and whether it
    improved the session's best, oldest first."""
    out, best = [], None
    for r in session.steps:
        improved = r.best_speedup is not None and (best is None or r.best_speedup > best)
        best = r.best_speedup if improved else best
        if r.selection.direction:
            no_move = bool(r.candidates) and all(c.outcome == ProposalOutcome.NO_MOVE.value for c in r.candidates)
            out.append(HistoryEntry(state=r.state, direction=r.selection.direction, reward=r.reward,
                                    improved=improved, no_move=no_move))
    return out


def memory_at(session: Session, step: int) -> HTG:
    """The HTG after step `step` (0 = as the session began): snapshot + deltas of steps 1..step."""
    if not 0 <= step <= len(session.steps):
        raise StepRangeError(f"session {session.id} has steps 1..{len(session.steps)}, not {step}")
    h = HTG.from_data(session.memory_initial)
    for rec in session.steps[:step]:
        if rec.memory_delta:
            apply_delta(h, rec.memory_delta)
    return h


def _free_path(p: Path) -> Path:
    if not p.exists():
        return p
    for i in range(2, 10_000):
        q = p.with_name(f"{p.stem}-{i}{p.suffix}")
        if not q.exists():
            return q
    raise SessionError(f"no free file name next to {p}")


def branch_session(path: str | os.PathLike, at: int, to: str | os.PathLike | None = None) -> Path:
    """A new session file keeping steps 1..at (and the memory as after step at)."""
    src = Path(path)
    parent = load_session(src)
    if not 0 <= at <= len(parent.steps):
        raise StepRangeError(f"{src}: cannot branch at step {at}; the session has steps 1..{len(parent.steps)}")
    steps = parent.steps[:at]
    for rec in steps:  # deltas keep their origin, so a bank never merges a shared step twice
        if rec.memory_delta and not rec.memory_delta.get("session"):
            rec.memory_delta["session"] = parent.id
    child = Session(id=new_session_id(parent.problem.id), problem=parent.problem, config=parent.config,
                    memory_initial=parent.memory_initial, created_at=time.time(),
                    parent={"session": str(src), "step": at, "id": parent.id})
    for rec in steps:
        record_step(child, rec)
    dest = Path(to) if to is not None else _free_path(src.with_name(f"{src.stem}.branch{at}{SESSION_SUFFIX}"))
    save_session(child, dest)
    return dest


def export_best(session: Session, to: str | os.PathLike | None = None) -> Path:
    """Write the best candidate as a KernelBench-format solution file (the ModelNew module)."""
    if not session.best_code or session.best_result is None:
        raise SessionError(f"session {session.id} has no correct candidate to export")
    r = session.best_result
    dest = Path(to) if to is not None else sessions_dir() / f"{session.id}.solution.py"
    head = (f"# htam solution for {session.problem.id}, session {session.id}, step {session.best_step}: "
            f"{r.status.value}, speedup vs eager {r.speedup_eager if r.speedup_eager is None else round(r.speedup_eager, 4)}"
            f" on {r.device} ({r.backend or session.config.backend})\n")
    from htam_engine.storage import atomic_write

    code = session.best_code if session.best_code.endswith("\n") else session.best_code + "\n"
    atomic_write(dest, (head + code).encode())
    return dest


# A step's outcome when no candidate was evaluated (`step_status`); evaluated steps take the
# result's status (ok, incorrect, compile_error, ...).
VETOED, SKIPPED, STOPPED, NO_CANDIDATE, STEP_ERROR = "vetoed", "skipped", "stopped", "no_candidate", "error"


def step_decision(rec: StepRecord) -> Decision | None:
    """The decision that shaped the step: its outcome's, else (nothing evaluated) the skip."""
    out = rec.outcome
    if out is not None:
        return out.decision
    return next((c.decision for c in rec.candidates if c.decision is not None), None)


def step_status(rec: StepRecord) -> str:
    """What became of a step, in one word (`htam sessions show`, the app, the batch rows)."""
    out = rec.outcome
    if out is not None:
        if out.result is not None:
            return out.result.status.value
        if out.decision is not None and out.decision.action is Action.VETO:
            return VETOED
        return NO_CANDIDATE
    if not rec.candidates:
        return STEP_ERROR  # the step itself failed (see its selection's reason)
    decision = step_decision(rec)
    if decision is not None and decision.action is Action.SKIP:
        return STOPPED if decision.by is Decider.STOP else SKIPPED
    return NO_CANDIDATE


def step_speedup(rec: StepRecord) -> float | None:
    """The fastest correct candidate of a step (None when none was correct)."""
    r = rec.outcome.result if rec.outcome is not None else None
    return float(r.speedup_eager) if r is not None and r.ok and r.speedup_eager is not None else None


def _step_summary(rec: StepRecord) -> dict[str, Any]:
    out = rec.outcome
    r = out.result if out else None
    decision = step_decision(rec)
    return {
        "step": rec.step,
        "state": codec.to_plain(rec.state),
        "direction": rec.selection.direction,
        "selection_mode": rec.selection.mode,
        "reason": rec.selection.reason,
        "strategies": [v.id for v in rec.retrieval.strategies],
        "samples": len(rec.candidates),
        "chosen": rec.chosen,
        "status": step_status(rec),
        "correct": bool(r and r.correct),
        "speedup_eager": r.speedup_eager if r else None,
        "speedup_compile": r.speedup_compile if r else None,
        "runtime_ms": r.runtime_ms if r else None,
        "decision": decision.action.value if decision else None,
        "decided_by": decision.by.value if decision else None,
        "decision_reason": decision.reason if decision else "",
        "failure": out.failure if out else "",
        "reward": rec.reward,
        "best_speedup": rec.best_speedup,
        "new_strategy": rec.new_strategy,
        "started_at": rec.started_at,
        "finished_at": rec.finished_at,
        "usage": codec.to_plain(sum((c.usage for c in rec.candidates), Usage())),
    }


def summarize(session: Session, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """THE session summary (`sessions show --json`, `run --json`)."""
    cfg = codec.to_plain(session.config)
    return {
        "session": session.id,
        "path": str(path) if path is not None else None,
        "problem": {"id": session.problem.id, "path": session.problem.path, "overrides": session.problem.overrides},
        "config": cfg,
        "steps": [_step_summary(r) for r in session.steps],
        "best": session.best_result.to_dict() if session.best_result else None,
        "best_step": session.best_step,
        "best_speedup": best_speedup(session),
        "parent": session.parent,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "usage": codec.to_plain(session.usage),
    }


def list_sessions(folder: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """One row per session file (newest change first); unreadable files come back with "error"."""
    d = Path(folder) if folder is not None else sessions_dir()
    if not d.is_dir():
        raise SessionFileError(f"{d}: no such folder")
    rows = []
    for p in sorted(d.glob(f"*{SESSION_SUFFIX}")):
        try:
            meta = read_meta(p)
            rows.append({"path": str(p), "session": meta.get("session"), "problem": meta.get("problem"),
                         "steps": meta.get("steps"), "best_speedup": meta.get("best_speedup"),
                         "updated_at": meta.get("updated_at") or p.stat().st_mtime, "parent": meta.get("parent")})
        except SessionFileError as exc:
            rows.append({"path": str(p), "error": str(exc), "updated_at": p.stat().st_mtime})
    rows.sort(key=lambda r: -(r.get("updated_at") or 0.0))
    return rows
