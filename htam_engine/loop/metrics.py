"""The field's metrics, computed in one place from session files.

Per problem (`problem_row`): whether a correct kernel was found, the best
candidate's speedups, tokens, cost, wall time. Over a suite (`suite_metrics`):

- correctness rate: problems with a correct kernel / problems
- fast_p (KernelBench): problems whose best kernel is correct AND faster than the
  baseline by more than p, over all problems; p in FAST_P; against eager PyTorch
  and against torch.compile (a problem without a torch.compile baseline counts as
  not faster for p > 0; fast_0 is the correctness rate either way)
- geometric-mean speedup over all problems, where a problem with no correct kernel
  counts as 1.0 (its user keeps PyTorch), overall and per level; and the geomean
  over the correct problems only
- tokens and cost per problem (mean), total wall time
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable

from htam_engine.session.model import Session

FAST_P = (0.0, 1.0, 1.5, 2.0)

ROW_FIELDS = (
    "problem", "level", "family", "steps", "status", "correct", "speedup_eager", "speedup_compile",
    "runtime_ms", "ref_runtime_ms", "compile_ref_runtime_ms", "best_step", "candidates", "evaluated",
    "prompt_tokens", "completion_tokens", "tokens", "cost_usd", "wall_s", "finish", "session", "note",
)

_LEVEL = re.compile(r"level[_-]?(\d+)")


def session_level(session: Session) -> int | None:
    level = session.config.extra.get("level")
    if isinstance(level, int):
        return level
    m = _LEVEL.search(f"{session.problem.id} {session.problem.path or ''}")
    return int(m.group(1)) if m else None


def _last_outcome(session: Session) -> tuple[str, str]:
    """(status, why): the best result's status, else the last step that had an outcome's, with
    what a person reading the table needs to know about a failure (the proposer's refusal, the
    harness's message, a veto's reason)."""
    from htam_engine.session import step_status

    if session.best_result is not None:
        return session.best_result.status.value, ""
    for step in reversed(session.steps):
        out = step.outcome
        if out is None:
            continue
        if out.result is not None:
            return step_status(step), out.result.diagnostics.message
        if out.decision is not None and out.decision.reason:
            return step_status(step), out.decision.reason
        return step_status(step), out.failure
    return (step_status(session.steps[-1]), "") if session.steps else ("none", "")


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def problem_row(session: Session, path: str | Path | None = None) -> dict[str, Any]:
    best = session.best_result
    correct = bool(best is not None and best.ok and best.correct)
    cands = [c for st in session.steps for c in st.candidates]
    wall = sum(max(0.0, st.finished_at - st.started_at) for st in session.steps)
    u = session.usage
    status, note = _last_outcome(session)
    return {
        "problem": session.problem.id,
        "level": session_level(session),
        "family": session.config.extra.get("family"),
        "steps": len(session.steps),
        "status": status,
        "note": note[:200],
        "correct": correct,
        "speedup_eager": _finite(best.speedup_eager) if correct else None,
        "speedup_compile": _finite(best.speedup_compile) if correct else None,
        "runtime_ms": _finite(best.runtime_ms) if correct else None,
        "ref_runtime_ms": _finite(best.ref_runtime_ms) if best is not None else None,
        "compile_ref_runtime_ms": _finite(best.compile_ref_runtime_ms) if best is not None else None,
        "best_step": session.best_step,
        "candidates": len(cands),
        "evaluated": sum(1 for c in cands if c.result is not None),
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "tokens": u.prompt_tokens + u.completion_tokens,
        "cost_usd": u.cost_usd,
        "wall_s": round(wall, 3),
        "finish": session.config.extra.get("finished"),
        "session": str(path) if path is not None else "",
    }


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _effective(row: dict[str, Any], key: str) -> float:
    """The speedup a user gets: the kernel's when correct, else 1.0 (keep PyTorch)."""
    v = row.get(key)
    return float(v) if row.get("correct") and v is not None and v > 0 else 1.0


def _fast_p(rows: list[dict[str, Any]], key: str, p: float) -> float | None:
    if not rows:
        return None
    if p == 0.0:
        return sum(1 for r in rows if r["correct"]) / len(rows)
    return sum(1 for r in rows if r["correct"] and r.get(key) is not None and r[key] > p) / len(rows)


def _p_name(p: float) -> str:
    return f"fast_{p:g}"


def suite_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    levels = sorted({r["level"] for r in rows if r.get("level") is not None})
    out: dict[str, Any] = {
        "problems": n,
        "correct": sum(1 for r in rows if r["correct"]),
        "correctness_rate": (sum(1 for r in rows if r["correct"]) / n) if n else None,
        "fast_p_eager": {_p_name(p): _fast_p(rows, "speedup_eager", p) for p in FAST_P},
        "fast_p_compile": {_p_name(p): _fast_p(rows, "speedup_compile", p) for p in FAST_P},
        "geomean_speedup_eager": geomean(_effective(r, "speedup_eager") for r in rows),
        "geomean_speedup_compile": geomean(_effective(r, "speedup_compile") for r in rows
                                           if not r["correct"] or r.get("speedup_compile") is not None),
        "geomean_correct_eager": geomean(r["speedup_eager"] for r in rows if r["correct"]),
        "per_level": {},
        "tokens_per_problem": (sum(r["tokens"] for r in rows) / n) if n else None,
        "cost_per_problem_usd": (sum(r["cost_usd"] for r in rows) / n) if n else None,
        "total_tokens": sum(r["tokens"] for r in rows),
        "total_cost_usd": sum(r["cost_usd"] for r in rows),
        "wall_s": round(sum(r["wall_s"] for r in rows), 3),
        "missing_compile_baseline": sum(1 for r in rows if r["correct"] and r.get("speedup_compile") is None),
    }
    for lv in levels:
        sub = [r for r in rows if r.get("level") == lv]
        out["per_level"][str(lv)] = {
            "problems": len(sub),
            "correctness_rate": sum(1 for r in sub if r["correct"]) / len(sub),
            "fast_1_eager": _fast_p(sub, "speedup_eager", 1.0),
            "geomean_speedup_eager": geomean(_effective(r, "speedup_eager") for r in sub),
        }
    return out


def rows_from_sessions(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Rows recomputed from session files (what a results table must agree with)."""
    from htam_engine.session import load_session

    return [problem_row(load_session(p), p) for p in paths]
