"""The side-by-side table of verifications: one row layout for the terminal, the batch report
and the bench scripts, and the agreement counts under it."""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from htam_engine.loop.report import times
from htam_engine.verify.settings import AGREEMENT
from htam_engine.verify.side_by_side import Verification

HEADERS = ("problem", "htam", "htam ms", "htam ref ms", "htam speedup", "KernelBench", "KB ms", "KB ref ms",
           "KB speedup", "gap")


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def gap_text(gap: float | None) -> str:
    return "-" if gap is None else f"{100 * gap:+.1f} %"


def trials_text(trials: Sequence[float]) -> str:
    """Trial times (ms) as their median and range: what a mean alone hides."""
    return f"median {statistics.median(trials):.4g}, {min(trials):.4g}-{max(trials):.4g}"


def row(v: Verification) -> list[str]:
    h, k = v.htam, v.kernelbench
    return [v.problem, h.status.value, _ms(h.runtime_ms), _ms(h.ref_runtime_ms), times(h.speedup_eager),
            k.status, _ms(k.runtime_ms), _ms(k.ref_runtime_ms), times(k.speedup), gap_text(v.speedup_gap)]


def summary(vs: list[Verification]) -> dict[str, Any]:
    timed = [v for v in vs if v.speedup_gap is not None]
    return {
        "solutions": len(vs),
        "verdicts_agree": sum(v.verdicts_agree for v in vs),
        "both_timed": len(timed),
        "within_agreement": sum(abs(v.speedup_gap) <= AGREEMENT for v in timed),
        "agreement": AGREEMENT,
        "worst_gap": max((v.speedup_gap for v in timed), key=abs, default=None),
    }


def summary_lines(vs: list[Verification]) -> list[str]:
    s = summary(vs)
    return [f"same verdict: {s['verdicts_agree']} of {s['solutions']}",
            f"speedups within {100 * AGREEMENT:g} % of KernelBench's: {s['within_agreement']} of {s['both_timed']} "
            f"timed by both (worst gap {gap_text(s['worst_gap'])})"]


def markdown(vs: list[Verification]) -> str:
    """The batch report's section: the table, then the counts."""
    lines = ["## Agreement with KernelBench (htam verify)", "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row(v)) + " |" for v in vs]
    lines += [""] + [f"- {line}" for line in summary_lines(vs)]
    errors = [v for v in vs if v.kernelbench.error]
    if errors:
        lines += [""] + [f"- {v.problem}: KernelBench gave no verdict: {v.kernelbench.error}" for v in errors]
    return "\n".join(lines) + "\n"
