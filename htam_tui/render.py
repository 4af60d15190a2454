"""Pure renderers: view facts -> rich renderables / text. No widgets, no clocks."""

from __future__ import annotations

import ast
import difflib
import math

from rich.text import Text

from htam_engine.memory.types import Retrieval, Selection

BLOCKS = " ▁▂▃▄▅▆▇█"


def fmt_speedup(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.2f}x"


def status_line(v, width: int | None = None) -> Text:
    """The one-line status, most urgent first so a narrow terminal keeps it: pending decisions,
    engine state, step k of N, best speedup, policy, tokens and cost, backend/device, problem.
    When the full line is wider than `width`, labels shorten and unused facts (no tokens yet)
    drop, so the problem name, last, still fits at 80 columns."""
    problem = v.problem or "-"
    compact = False
    while True:
        t = Text(no_wrap=True, overflow="ellipsis")
        if v.pending:
            flag = f"PENDING {len(v.pending)} " if compact else f" DECISION PENDING ({len(v.pending)}) "
            t.append(flag, style="bold reverse yellow")
        t.append(f"[{v.engine_state}] " if compact else f" [{v.engine_state}] ", style="bold")
        t.append(f"step {v.step}/{v.steps_planned or '?'} ")
        t.append(f"best {fmt_speedup(v.best_speedup)} ", style="bold green" if (v.best_speedup or 0) > 1 else "")
        t.append(f"{v.policy or '-'} " if compact else f"policy {v.policy or '-'} ")
        if not compact:
            t.append(f"tok {v.tokens} ${v.cost_usd:.2f} ")
        elif v.tokens:  # no tokens yet (the offline proposer uses none): nothing to say
            tokens = str(v.tokens) if v.tokens < 10_000 else f"{v.tokens / 1000:.0f}k"
            t.append(f"tok {tokens} ${v.cost_usd:.2f} ")
        t.append(f"{v.backend or '-'}/{v.device or '-'} ")
        name = problem.rsplit(":", 1)[-1] if compact else problem  # "builtin:x" -> "x"
        t.append(name, style="bold")
        if compact or width is None or t.cell_len <= width:
            return t
        compact = True


def decision_view(request, pending: int) -> Text:
    """The decision bar under the panes: which candidate waits, what produced it, the keys."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if request is None:
        return t
    t.append(f" DECIDE step {request.step} sample {request.sample} ", style="bold reverse yellow")
    t.append(f" {pending} waiting " if pending > 1 else " ", style="yellow")
    t.append(request.direction or "no direction", style="bold cyan")
    if request.strategies:
        more = f" (+{len(request.strategies) - 1})" if len(request.strategies) > 1 else ""
        t.append(f" · {request.strategies[0]}{more}")
    if request.template:
        t.append(f" · {request.template}", style="dim")
    if request.why:
        t.append(f" · asked: {request.why}", style="dim")
    t.append("\n")
    for key, label in (("a", "approve"), ("v", "veto"), ("e", "edit"), ("s", "skip"), ("A", "approve all"),
                       ("d", "diff"), ("o", "open")):
        t.append(f" {key} ", style="bold reverse")
        t.append(f"{label} ")
    return t


def direction_view(sel: Selection | None, path: list[str], top: int = 6) -> Text:
    """The chosen direction with every term of its score, the runners-up, and the recent path.
    Plain wrapped lines rather than a table: the pane is ~30 columns at 80x24."""
    if sel is None:
        return Text("no direction selected yet", style="dim")
    t = Text()
    t.append(f"▶ {sel.direction}", style="bold cyan")
    t.append(f"  {sel.mode}{' ' + sel.ablation if sel.ablation else ''}\n")
    chosen = next((s for s in sel.scores if s.direction == sel.direction), None)
    if chosen is not None:
        # short lines: the pane is ~30 columns at 80x24, and no value may be cut
        t.append(f"  total {chosen.total:.3f}" + (f" p={chosen.probability:.2f}" if chosen.probability is not None
                                                  else "") + "\n")
        t.append(f"  trans {chosen.transition:+.3f} prior {chosen.prior:+.3f}\n")
        t.append(f"  expl {chosen.exploration:+.3f}\n")
        for term in sorted(chosen.terms, key=lambda x: x.k):
            t.append(f"  k={term.k} {term.contribution:+.3f} from\n", style="dim")
            t.append(f"    {term.from_direction}\n", style="dim")
            t.append(f"    w {term.position_weight:.2f} sim {term.similarity:.2f} V {term.edge_value:+.2f}\n",
                     style="dim")
    if sel.reason:
        t.append(sel.reason + "\n", style="italic")
    others = [s for s in sel.scores if s.direction != sel.direction][: max(0, top - 1)]
    for s in others:
        t.append(f"  {s.direction} {s.total:.3f}", style="")
        t.append(f" (T {s.transition:.2f} P {s.prior:.2f} E {s.exploration:.2f})\n", style="dim")
    if path:
        t.append("path: " + " → ".join(path), style="dim")
    t.rstrip()
    return t


def strategies_view(r: Retrieval | None) -> Text:
    if r is None:
        return Text("no strategies retrieved yet", style="dim")
    t = Text()
    t.append(f"under {r.direction or '(no guidance)'}\n", style="bold")
    for s in r.strategies:
        t.append(f"• {s.title}\n")
        t.append(f"  {s.tries} tries, {s.successes} ok, gain {s.mean_gain:+.2f}, fit {s.fit:.2f}", style="dim")
        t.append(f", template {s.template}\n" if s.template else "\n", style="dim")
    for n in r.notes:
        t.append(f"{n.from_direction} → {n.to_direction} [{n.source}]", style="yellow")
        for label, val in (("when", n.when), ("why", n.why), ("risk", n.risk)):
            if val:
                t.append(f" {label}: {val}")
        t.append("\n")
    t.rstrip()
    return t


def speedup_chart(speedups: list[float | None], eager: float = 1.0, compiled: float | None = None,
                  width: int = 40, height: int = 5) -> Text:
    """Per-step speedup bars with the eager (1.0x) and torch.compile baselines as rows of ─/┄.

    Failed steps show as ✗. The scale is 0..max(all values, baselines)."""
    values = speedups[-width:]
    if not values:
        return Text("no steps yet", style="dim")
    known = [x for x in values if x is not None] + [eager] + ([compiled] if compiled else [])
    top = max(known) * 1.05
    rows: list[Text] = []
    cells_per_row = 8

    def level(x: float) -> int:
        return round(x / top * height * cells_per_row)

    eager_row = min(height - 1, int(eager / top * height))
    comp_row = min(height - 1, int(compiled / top * height)) if compiled else None
    if comp_row == eager_row and height > 1:
        # two marks on one row would hide one: the faster baseline goes one row up (or down at the top)
        up = compiled >= eager
        comp_row = eager_row + (1 if up and eager_row < height - 1 else -1 if eager_row > 0 else 1)
    for r in range(height - 1, -1, -1):
        line = Text(no_wrap=True)
        for x in values:
            if x is None:
                line.append("✗" if r == 0 else " ", style="red")
                continue
            fill = level(x) - r * cells_per_row
            if fill >= cells_per_row:
                ch = BLOCKS[-1]
            elif fill > 0:
                ch = BLOCKS[fill]
            elif r == eager_row:
                ch = "─"
            elif r == comp_row:
                ch = "┄"
            else:
                ch = " "
            line.append(ch, style="green" if x >= eager else "yellow" if ch in BLOCKS[1:] else "dim")
        labels = []
        if r == eager_row:
            labels.append(f"─ eager {eager:.2f}x")
        if r == comp_row:
            labels.append(f"┄ compile {compiled:.2f}x")
        if labels:
            line.append(" " + " ".join(labels), style="dim")
        rows.append(line)
    return Text("\n").join(rows)


def sparkline(values: list[float], width: int) -> str:
    """The last `width` values as block characters scaled between their min and max."""
    values = values[-width:]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return "".join(BLOCKS[1 + round((v - lo) / span * (len(BLOCKS) - 2))] for v in values)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def timing_lines(stage: str, started: float | None, timings: list[float], result, now: float,
                 width: int = 40) -> Text:
    """Two lines over the chart. While a stage runs: its name and elapsed seconds, then the
    trial times as they come. After an evaluation: the candidate's, eager's and torch.compile's
    times in ms, then the stage seconds."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if started is not None:
        t.append(f"{stage or 'evaluating'} {max(0.0, now - started):.0f} s", style="bold")
        if timings:
            ordered = sorted(timings)
            t.append(f"\n{len(timings)} trials med {ordered[len(ordered) // 2]:.4g} min {ordered[0]:.4g} ms ")
            t.append(sparkline(timings, max(4, width - 34)), style="cyan")
        return t
    if result is None:
        t.append("idle: no evaluation yet", style="dim")
        return t
    t.append(f"{result.status.value} ", style="bold green" if result.ok else "bold red")
    t.append(f"{_ms(result.runtime_ms)} · eager {_ms(result.ref_runtime_ms)}")
    if result.compile_ref_runtime_ms is not None:
        t.append(f" · compile {_ms(result.compile_ref_runtime_ms)}")
    t.append(" ms")
    st = result.stages
    first = f" (first call {st.first_call_s:.1f}s)" if st.first_call_s >= 0.05 else ""  # a kernel's compile on a GPU
    t.append(f"\ncompile {st.compile_s:.1f}s{' cached' if st.compile_cached else ''} check {st.check_s:.1f}s{first} "
             f"time {st.time_s:.1f}s", style="dim")
    if result.timings:
        t.append(f" · {len(result.timings)} trials", style="dim")
    return t


def unified_diff(old: str | None, new: str) -> str:
    if old is None:
        return "(no previous best to compare against)"
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), "previous best", "candidate", lineterm="")
    text = "\n".join(diff)
    return text or "(identical to the previous best)"


def kernel_sources(code: str) -> list[tuple[int, str]]:
    """The C++/CUDA sources embedded in a candidate module (load_inline strings) with the
    module line each starts on. Triton or unparsable modules give []."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            s = node.value
            if "#include" in s or "__global__" in s or "torch::Tensor" in s or "at::Tensor" in s:
                found.append((node.lineno, s))
    return sorted(found)


# Lines torch's load_inline writes before the given sources in the files it compiles.
HEADER_LINES = {"main.cpp": 1, "cuda.cu": 3}


def triton_kernel_line(code: str) -> int | None:
    """Module line of the first @triton.jit function's `def` (Triton counts error lines from it)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            return node.lineno
    return None


def locate(code: str, file: str | None, line: int) -> tuple[str, int]:
    """Where a diagnostic points in the source pane: ("module", line) or ("kernel", line of the
    kernel-only view, which joins the module's C++/CUDA strings in order)."""
    name = (file or "").lower()
    if name == "triton":
        start = triton_kernel_line(code)
        return "module", start + line - 1 if start else line
    parts = kernel_sources(code)
    if not name or name.endswith(".py") or not parts:
        return "module", line
    want_cuda = name.endswith((".cu", ".cuh"))
    offset = 0
    for _, text in parts:
        if ("__global__" in text) == want_cuda:
            return "kernel", offset + max(1, line - HEADER_LINES.get(name, 0))
        offset += text.count("\n") + 1
    return "kernel", line
