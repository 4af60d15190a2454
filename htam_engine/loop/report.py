"""Markdown report of a batch (report.md) and the side-by-side comparison table of `htam compare`."""

from __future__ import annotations

from typing import Any

from htam_engine.loop.metrics import FAST_P


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def times(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}x"


def money(x: float | None) -> str:
    return "-" if x is None else f"${x:.4f}"


def fast_p_keys() -> list[str]:
    return [f"fast_{p:g}" for p in FAST_P]


def metric_lines(m: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) pairs: the one list both the report and `htam compare` show."""
    out = [
        ("problems", str(m["problems"])),
        ("correct", f"{m['correct']} ({pct(m['correctness_rate'])})"),
    ]
    for key in fast_p_keys():
        out.append((f"{key} vs eager", pct(m["fast_p_eager"].get(key))))
    for key in fast_p_keys():
        out.append((f"{key} vs torch.compile", pct(m["fast_p_compile"].get(key))))
    out += [
        ("geomean speedup vs eager (failures = 1.0)", times(m["geomean_speedup_eager"])),
        ("geomean speedup vs torch.compile (failures = 1.0)", times(m["geomean_speedup_compile"])),
        ("geomean speedup vs eager, correct only", times(m["geomean_correct_eager"])),
    ]
    for level, lm in sorted(m.get("per_level", {}).items()):
        out.append((f"level {level}: geomean vs eager / correct / fast_1",
                    f"{times(lm['geomean_speedup_eager'])} / {pct(lm['correctness_rate'])} / {pct(lm['fast_1_eager'])}"))
    tokens = m.get("tokens_per_problem")
    out += [
        ("tokens per problem", "-" if tokens is None else f"{tokens:.0f}"),
        ("cost per problem", money(m.get("cost_per_problem_usd"))),
        ("wall time, summed over problems (they overlap with --jobs > 1)", f"{m['wall_s']:.1f} s"),
    ]
    return out


def render_report(doc: dict[str, Any]) -> str:
    m, rows, settings = doc["metrics"], doc["rows"], doc.get("settings", {})
    lines = ["# htam batch report", ""]
    lines.append("Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    lines += ["", "## Metrics", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in metric_lines(m)]
    lines += [
        "",
        "fast_p: share of all problems whose best kernel is correct and more than p times faster "
        "than the baseline. Geomean with failures = 1.0: a problem without a correct kernel keeps PyTorch.",
    ]
    if m.get("missing_compile_baseline"):
        lines.append(f"{m['missing_compile_baseline']} correct problem(s) had no torch.compile baseline.")
    lines += ["", "## Problems", "",
              "| problem | level | steps | status | speedup vs eager | vs torch.compile | tokens | cost | wall | note |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = (r.get("note") or "").replace("|", "/").replace("\n", " ")
        lines.append(
            f"| {r['problem']} | {r['level'] if r['level'] is not None else '-'} | {r['steps']} | {r['status']} | "
            f"{times(r['speedup_eager'])} | {times(r['speedup_compile'])} | {r['tokens']} | "
            f"{money(r['cost_usd'])} | {r['wall_s']:.1f} s | {note} |"
        )
    if doc.get("unfinished"):
        lines += ["", "Not finished yet (resume with the same command): " + ", ".join(doc["unfinished"])]
    if doc.get("broken"):
        lines += ["", "Problems that could not be loaded:", ""] + [f"- {b}" for b in doc["broken"]]
    return "\n".join(lines) + "\n"


def comparison(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of (metric, value per results file) for `htam compare`."""
    names = [d.get("_name") or d.get("_path", "") for d in docs]
    tables = [dict(metric_lines(d["metrics"])) for d in docs]
    labels: list[str] = []
    for t in tables:  # union in first-seen order: level rows differ between suites
        labels += [label for label in t if label not in labels]
    rows = [{"metric": label, "values": [t.get(label, "-") for t in tables]} for label in labels]
    return {"columns": names, "settings": [d.get("settings", {}) for d in docs], "rows": rows,
            "metrics": [d["metrics"] for d in docs]}
