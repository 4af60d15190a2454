"""The ablation table, laid out like the paper's, and the experiment's report around it.

One table model (`Grid`: a title, columns, rows of strings) is built here and rendered twice:
as Markdown for report.md and the README, and as a terminal table by `htam compare DIR`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from htam_engine.experiment.plan import Start
from htam_engine.experiment.run import Outcome
from htam_engine.experiment.stats import (THRESHOLD, Interval, Paired, Summary, measured_only, summarize,
                                         unmeasured_steps)
from htam_engine.experiment.table import TableMode

START_TITLES = {
    Start.COLD: "cold: every run starts from the seed memory",
    Start.WARM: "warm: every run starts from a bank learned on the disjoint bank problems",
}


@dataclass(slots=True)
class Grid:
    title: str
    columns: list[str]
    rows: list[list[str]]


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def interval(iv: Interval, fmt: str = ".2f") -> str:
    if iv.value is None:
        return "-"
    if iv.low is None or iv.high is None:
        return format(iv.value, fmt)
    return f"{format(iv.value, fmt)} [{format(iv.low, fmt)}, {format(iv.high, fmt)}]"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _p(p: Paired | None) -> str:
    return "-" if p is None or p.p_value is None else f"{p.p_value:.3g}"


def ablation_grid(summary: Summary, start: Start) -> Grid:
    pct = f"{100 * THRESHOLD:.0f} %"
    columns = ["arm", "runs", "correct", f"steps to {pct}, median [95 % CI]", "mean steps",
               *(f"best@{k} geomean [95 % CI]" for k in summary.best_at),
               "Δ steps vs full, mean [95 % CI]", "full saves", "full better / worse / tied", "p"]
    rows = []
    for r in summary.rows:
        if r.start is not start:
            continue
        p = r.vs_full
        rows.append([
            r.arm.value, str(r.runs), _pct(r.correct_rate), interval(r.steps_median, ".1f"), _num(r.steps_mean, ".2f"),
            *(interval(r.best_at[k], ".3f") for k in summary.best_at),
            "-" if p is None else interval(p.mean_delta, "+.2f"), _pct(p.cut) if p else "-",
            "-" if p is None else f"{p.reference_better} / {p.other_better} / {p.ties}", _p(p),
        ])
    return Grid(START_TITLES[start], columns, rows)


def transfer_grid(summary: Summary) -> Grid:
    columns = ["arm", "pairs", "Δ steps cold - warm, mean [95 % CI]", "warm saves", "warm better / worse / tied", "p"]
    rows = [[arm.value, str(p.pairs), interval(p.mean_delta, "+.2f"), _pct(p.cut),
             f"{p.reference_better} / {p.other_better} / {p.ties}", _p(p)] for arm, p in summary.transfer.items()]
    return Grid("memory transfer: warm against cold, per (problem, seed)", columns, rows)


def grids(summary: Summary) -> list[Grid]:
    out = [ablation_grid(summary, s) for s in (Start.COLD, Start.WARM) if any(r.start is s for r in summary.rows)]
    if summary.transfer:
        out.append(transfer_grid(summary))
    return out


def markdown_grid(g: Grid) -> str:
    lines = [f"**{g.title}**", "", "| " + " | ".join(g.columns) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(g.columns))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in g.rows]
    return "\n".join(lines)


def mode_line(meta: dict[str, Any]) -> str:
    """Which mode produced the figures: the report must say it."""
    mode = meta.get("mode")
    c = meta.get("table_counts") or {}
    if mode == TableMode.REPLAYED.value:
        line = f"replayed from the evaluation table {meta.get('table') or '(in memory)'}: nothing was evaluated here"
        if c.get("missing"):
            line += f"; {c['missing']} requested candidates were NOT in the table (counted as harness failures)"
        return line
    if mode == TableMode.MEASURED.value:
        return f"measured by {meta.get('evaluator') or 'a worker pool'}; table {meta.get('table') or '(in memory)'}"
    return "unknown (the experiment did not finish writing its record)"


def facts(outcome: Outcome, summary: Summary) -> list[str]:
    spec, meta = outcome.spec, outcome.meta
    c = meta.get("table_counts") or {}
    lines = [
        f"Mode: {mode_line(meta)}.",
        f"Arms {', '.join(a.value for a in spec.arms)}; seeds {', '.join(map(str, spec.seeds))}; "
        f"{spec.steps} steps; backend {spec.backend} on {spec.device}.",
        f"Runs: {summary.runs} of {meta.get('planned_runs', '?')} finished"
        + (f" (the {meta.get('deadline_s')} s deadline stopped the rest)" if meta.get("deadline_hit") else "")
        + (f"; {summary.errors} broke and are left out" if summary.errors else "")
        + f"; wall {meta.get('wall_s', '?')} s.",
        f"Distinct candidates evaluated by the runs (bank runs included): {summary.distinct_candidates}; "
        f"evaluations asked for {c.get('requests', '?')}, answered from the table {c.get('hits', '?')}, "
        f"joined in flight {c.get('joined', '?')}, evaluated {c.get('evaluated', '?')}.",
        f"Warm bank: {meta.get('warm_bank', 'none')}.",
        f"Test problems ({len(spec.test)}): {', '.join(spec.test)}.",
        f"Bank problems ({len(spec.bank)}, disjoint from the test problems): {', '.join(spec.bank) or 'none'}.",
    ]
    if summary.unsolved:
        lines.append(f"No run found a correct kernel for {len(summary.unsolved)} problem(s), left out of the step "
                     f"counts: {', '.join(summary.unsolved)}.")
    unmeasured = {cell: n for cell, n in unmeasured_steps(outcome.records).items() if n}
    if unmeasured:
        lines.append("Steps that asked for a candidate the table lacks (each counted as a failed step): "
                     + ", ".join(f"{arm.value} {start.value} {n}" for (start, arm), n in sorted(unmeasured.items()))
                     + ".")
    return lines


def measured_view(outcome: Outcome) -> tuple[str, list[Grid]] | None:
    """Where some steps asked for candidates the table lacks: a note and the tables again on the
    (problem, seed) pairs no run of any arm touched them in (stats.measured_only); None otherwise."""
    if not any(unmeasured_steps(outcome.records).values()):
        return None
    kept, pairs, of = measured_only(outcome.records)
    note = (f"The same on measured candidates only: the {pairs} of {of} (problem, seed) pairs where no run, of "
            "any arm or start, asked for a candidate the table lacks (the warm bank is still the one learned "
            "above). A subset chosen by the arms' own choices: read it beside the tables above, not instead.")
    return note, (grids(summarize(outcome.spec, kept, outcome.bank_records)) if kept else [])


def render_markdown(outcome: Outcome, summary: Summary | None = None) -> str:
    summary = summary or summarize(outcome.spec, outcome.records, outcome.bank_records)
    pct = f"{100 * THRESHOLD:.0f} %"
    parts = ["# htam ablation experiment", "", *(f"- {f}" for f in facts(outcome, summary)), ""]
    for g in grids(summary):
        parts += [markdown_grid(g), ""]
    measured = measured_view(outcome)
    if measured is not None:
        note, apart = measured
        parts += [f"**{note}**", ""]
        for g in apart:
            parts += [markdown_grid(g), ""]
    parts += [
        f"Steps to {pct}: the first step after which a run's best correct speedup reaches {pct} of the best any "
        f"run found for that problem (never: {summary.budget + 1}). best@k: a run's best correct speedup over "
        "eager after k steps (none yet: 1.0). Δ steps: the arm's steps minus the full method's, per (problem, "
        "seed); positive means the full method got there sooner; 'full saves' = 1 - mean(full) / mean(arm). "
        "Intervals: percentile bootstrap resampling problems (with all their seeds); p: Wilcoxon signed-rank "
        "test on the per-problem mean differences.",
        "",
    ]
    return "\n".join(parts)


def summary_doc(outcome: Outcome, summary: Summary) -> dict[str, Any]:
    """The experiment as one JSON document: its record, the statistics and the tables' text."""
    measured = measured_view(outcome)
    return {"spec": outcome.spec.to_dict(), "meta": outcome.meta, "mode": mode_line(outcome.meta),
            "summary": asdict(summary), "tables": [asdict(g) for g in grids(summary)],
            "measured_only": None if measured is None else {"note": measured[0],
                                                            "tables": [asdict(g) for g in measured[1]]}}
