"""Build the generation prompt from a ProposalRequest, within a size bound.

The templates live in `prompts/<backend>.txt` (string.Template slots). Sections that
can grow without limit — compiler logs, earlier code, strategies, notes, veto reasons —
each have renderings from full to compact; when the prompt is over its bound the
least useful section is shortened first. The problem source and the output contract
are never trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from string import Template

from htam_engine.evaluate.result import EvalResult
from htam_engine.families import Backend
from htam_engine.propose.base import ProposalRequest

LOG_LINES = (60, 16, 0)  # compiler/runtime log lines kept: full, compact, none
STRATEGIES = (6, 3, 1)
NOTES = (6, 2, 0)
VETOES = (8, 3, 1)  # newest kept
BEST_CODE_LINES_MIN = 120  # the best candidate's head and tail, as the very last resort


@dataclass(slots=True)
class BuiltPrompt:
    system: str
    user: str
    trimmed: list[str] = field(default_factory=list)  # sections shortened to fit the bound
    trimmable: bool = True  # False when every section is already at its most compact

    @property
    def text(self) -> str:
        """What the session records as the prompt."""
        return f"[system]\n{self.system}\n\n[user]\n{self.user}"

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


@cache
def template(name: str) -> Template:
    return Template(resources.files("htam_engine.propose").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8"))


def build_prompt(request: ProposalRequest, max_chars: int = 48_000) -> BuiltPrompt:
    backend = request.backend.value if isinstance(request.backend, Backend) else str(request.backend)
    fixed = {
        "step": str(request.step),
        "problem_name": request.problem.name,
        "family": request.problem.family.value,
        "problem_source": request.problem.source.rstrip(),
        "inputs_section": _inputs(request),
        "state_section": _state(request),
    }
    # Each trimmable slot: renderings from richest to most compact, in the order they give way.
    variants: dict[str, list[str]] = {
        "last_section": [_last(request, n, code) for n, code in ((LOG_LINES[0], True), (LOG_LINES[1], False), (0, False))],
        "veto_section": [_vetoes(request, n) for n in VETOES],
        "strategies_section": [_strategies(request, s, n) for s, n in zip(STRATEGIES, NOTES)],
        "best_section": [_best(request, n) for n in LOG_LINES] + [_best(request, 0, BEST_CODE_LINES_MIN)],
        "direction_section": [_direction(request)],
    }
    level = {k: 0 for k in variants}
    tmpl = template(backend)

    def render() -> str:
        return tmpl.substitute(fixed, **{k: v[level[k]] for k, v in variants.items()})

    user = render()
    trimmed: list[str] = []
    for name in variants:
        while len(user) > max_chars and level[name] + 1 < len(variants[name]):
            level[name] += 1
            user = render()
            if name not in trimmed:
                trimmed.append(name.removesuffix("_section"))
    exhausted = all(level[k] + 1 == len(v) for k, v in variants.items())
    return BuiltPrompt(template("system").template.strip(), _tidy(user), trimmed, trimmable=not exhausted)


def _tidy(text: str) -> str:
    """Empty sections leave blank runs; keep at most one blank line between sections,
    leaving code inside fences (the problem source, candidates) exactly as it was."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.strip() == "" and out and out[-1].strip() == "":
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"


def _inputs(r: ProposalRequest) -> str:
    if not r.problem.inputs:
        return ""
    specs = ", ".join(f"{t.dtype}{list(t.shape)}" for t in r.problem.inputs)
    return f"Inputs from get_inputs(): {specs}\n"


def _state(r: ProposalRequest) -> str:
    s = r.state
    return (
        f"## Where the search stands\nstatus: {s.status}; family: {s.family.value}; "
        f"bottleneck estimate: {s.bottleneck.value}; speedup so far: {s.speedup_bucket}\n"
    )


def _best(r: ProposalRequest, log_lines: int, code_lines: int | None = None) -> str:
    if not r.best_code:
        return "## Current best candidate\nNone yet: this is the first candidate.\n"
    code = r.best_code.rstrip()
    if code_lines is not None:
        code = _head_tail(code.splitlines(), code_lines, "# ... [{n} lines omitted to fit the prompt] ...")
    return (
        f"## Current best candidate\n```python\n{code}\n```\n"
        + (feedback(r.best_result, log_lines, "Its evaluation") if r.best_result else "")
    )


def _last(r: ProposalRequest, log_lines: int, with_code: bool) -> str:
    """The previous attempt, when it is not the best one (usually a failure to learn from)."""
    if r.last_result is None and r.last_failure:
        return f"## Previous attempt (not the best)\nIt produced no usable module: {r.last_failure}\n"
    if r.last_result is None or (r.last_code is not None and r.last_code == r.best_code):
        return ""
    head = "## Previous attempt (not the best)\n"
    code = f"```python\n{r.last_code.rstrip()}\n```\n" if with_code and r.last_code else ""
    return head + code + feedback(r.last_result, log_lines, "Its evaluation")


def feedback(result: EvalResult, log_lines: int, title: str) -> str:
    """An evaluation as the model should read it: status, errors, mismatch, timings."""
    d = result.diagnostics
    lines = [f"{title}: status {result.status.value}" + (f" — {d.message}" if d.message else "")]
    for m in d.compiler[: max(log_lines // 3, 3)]:
        where = ":".join(str(x) for x in (m.file, m.line, m.column) if x is not None)
        lines.append(f"  {m.severity}: {where + ': ' if where else ''}{m.message}")
    if d.mismatch is not None:
        mm = d.mismatch
        lines.append(
            f"  mismatch on {mm.input_set or 'inputs'}: max abs error {mm.max_abs_error:.3g}, max rel error {mm.max_rel_error:.3g}"
            + (f", worst at index {mm.where}" if mm.where else "")
            + (f", expected shape {mm.expected_shape} {mm.expected_dtype} got {mm.actual_shape} {mm.actual_dtype}"
               if (mm.expected_shape, mm.expected_dtype) != (mm.actual_shape, mm.actual_dtype) else "")
            + (f" ({mm.note})" if mm.note else "")
        )
    for f in result.integrity:
        lines.append(f"  integrity {f.severity}: {f.rule}: {f.message}")
    timing = [
        f"{label} {value:.4g}{unit}"
        for label, value, unit in (
            ("candidate", result.runtime_ms, " ms"),
            ("eager", result.ref_runtime_ms, " ms"),
            ("torch.compile", result.compile_ref_runtime_ms, " ms"),
            ("speedup vs eager", result.speedup_eager, "x"),
            ("speedup vs torch.compile", result.speedup_compile, "x"),
        )
        if value is not None
    ]
    if timing:
        lines.append("  timing: " + ", ".join(timing))
    if d.log and log_lines:
        lines.append("  log:\n" + trim_log(d.log, log_lines))
    return "\n".join(lines) + "\n"


def trim_log(log: str, max_lines: int) -> str:
    """Head and tail of a long log (errors cluster at both ends), with the cut marked."""
    rows = [r if len(r) <= 300 else r[:300] + " ..." for r in log.rstrip().splitlines()]
    return "\n".join("    " + r for r in _head_tail(rows, max_lines, "... [{n} lines trimmed] ...").splitlines())


def _head_tail(rows: list[str], keep: int, marker: str) -> str:
    """The first and last lines of `rows` (keep in all), the cut marked with `marker`."""
    if len(rows) > keep:
        head = keep // 2
        rows = rows[:head] + [marker.format(n=len(rows) - keep)] + rows[len(rows) - (keep - head) :]
    return "\n".join(rows)


def _direction(r: ProposalRequest) -> str:
    sel = r.selection
    if not sel.direction:
        return ""
    text = f"## Direction for this step: {sel.direction}\n"
    if sel.reason:
        text += f"Why: {sel.reason}\n"
    return text


def _strategies(r: ProposalRequest, max_strategies: int, max_notes: int) -> str:
    ret = r.retrieval
    parts: list[str] = []
    if ret.strategies:
        parts.append("## Strategies that worked before under this direction")
        for s in ret.strategies[:max_strategies]:
            record = f"tried {s.tries}, succeeded {s.successes}, mean gain {s.mean_gain:+.2f}" if s.tries else "untried"
            parts.append(f"- {s.title} ({record}): {s.description}" + (f" Pitfalls: {s.pitfalls}" if s.pitfalls else ""))
    notes = ret.notes[:max_notes]
    if notes:
        parts.append("\n## Transition notes" if parts else "## Transition notes")
        for n in notes:
            detail = "; ".join(f"{k}: {v}" for k, v in (("when", n.when), ("why", n.why), ("risk", n.risk)) if v)
            parts.append(f"- {n.from_direction} -> {n.to_direction} ({n.source}): {detail}")
    return "\n".join(parts) + "\n" if parts else ""


def _vetoes(r: ProposalRequest, keep: int) -> str:
    if not r.veto_reasons:
        return ""
    reasons = [v for v in r.veto_reasons if v.strip()][-keep:]
    if not reasons:
        return "## The person rejected earlier candidates\n"
    return "## The person rejected earlier candidates because\n" + "\n".join(f"- {v.strip()}" for v in reasons) + "\n"
