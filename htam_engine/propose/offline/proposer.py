"""The offline proposer: real kernels from templates attached to the HTG's local strategies.

No network and no key. It traces the problem, lowers it to kept PyTorch library
ops plus fused regions, picks a template from the retrieved strategies (first
applicable in rank order; the sample index walks further down the list), and
writes a complete ModelNew module for the requested backend.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from htam_engine.evaluate.result import EvalResult
from htam_engine.families import Backend, Family
from htam_engine.problems.model import Problem, ProblemError
from htam_engine.propose.base import Lesson, Proposal, ProposalRequest, TokenSink
from htam_engine.propose.offline.decompose import Unsupported
from htam_engine.propose.offline.lower import Plan, lower
from htam_engine.propose.offline.module import build_module
from htam_engine.propose.offline.templates import TEMPLATES, applies, default_template, supports
from htam_engine.propose.offline.trace import trace_problem

NAME = "offline"


@dataclass(slots=True)
class Generated:
    code: str
    template: str
    plan: Plan


def plan_problem(problem: Problem) -> Plan:
    """Trace and lower; raises Unsupported with a one-line reason."""
    try:
        return lower(trace_problem(problem))
    except ProblemError as exc:
        raise Unsupported(f"problem does not load ({exc})") from None


def candidate_templates(plan: Plan, backend: Backend, family: Family, ranked: list[str]) -> list[str]:
    """Applicable templates: the ranked ones first (in order), then the default."""
    out: list[str] = []
    for tid in ranked + [default_template(plan, family)]:
        if tid in TEMPLATES and tid not in out and supports(tid, backend, family) and applies(tid, plan):
            out.append(tid)
    return out


def generate(problem: Problem, backend: Backend | str, template: str | None = None) -> Generated:
    """One candidate for a problem (template None: the plan's default). Raises Unsupported."""
    backend = Backend(backend)
    plan = plan_problem(problem)
    tid = template or default_template(plan, problem.family)
    if tid not in TEMPLATES:
        raise Unsupported(f"unknown template {tid!r}")
    if not supports(tid, backend, problem.family) or not applies(tid, plan):
        raise Unsupported(f"template {tid} does not apply to this problem on {backend.value}")
    code = build_module(problem, plan, backend, TEMPLATES[tid].variant, tid)
    return Generated(code=code, template=tid, plan=plan)


async def _emit(sink: TokenSink | None, text: str) -> None:
    if sink is None:
        return
    for start in range(0, len(text), 2048):
        result = sink(text[start:start + 2048])
        if inspect.isawaitable(result):
            await result


class OfflineProposer:
    """Proposer protocol implementation (see propose/base.py)."""

    name = NAME

    async def propose(self, request: ProposalRequest, on_token: TokenSink | None = None) -> Proposal:
        backend = Backend(request.backend)
        ranked = [s.template for s in request.retrieval.strategies if s.template]
        try:
            plan = plan_problem(request.problem)
        except Unsupported as exc:
            return Proposal(code=None, failure=f"offline proposer: {exc}", model=NAME)
        except Exception as exc:  # noqa: BLE001 - a tracing fault fails this step, not the session
            return Proposal(code=None, failure=f"offline proposer: cannot analyse the problem: {exc!r}"[:300],
                            model=NAME)
        options = candidate_templates(plan, backend, request.problem.family, ranked)
        if not options:
            return Proposal(code=None, failure=f"offline proposer: no template applies on {backend.value}",
                            model=NAME)
        # samples of one step walk down the ranked list; never re-propose code already evaluated
        seen = {c for c in (request.best_code, request.last_code) if c}
        start = request.sample % len(options)
        order = options[start:] + options[:start]
        code, tid = None, order[0]
        for tid in order:
            try:
                code = build_module(request.problem, plan, backend, TEMPLATES[tid].variant, tid)
            except Unsupported as exc:
                return Proposal(code=None, failure=f"offline proposer: {exc}", model=NAME, template=tid)
            except Exception as exc:  # noqa: BLE001 - a generator fault fails this step, not the session
                return Proposal(code=None, failure=f"offline proposer: internal error in {tid}: {exc!r}"[:300],
                                model=NAME, template=tid)
            if code not in seen:
                break
        prompt = _explain(request, plan, tid, ranked)
        await _emit(on_token, code)
        return Proposal(code=code, prompt=prompt, raw_output=code, model=NAME, template=tid)

    async def reflect(self, request: ProposalRequest, code: str, result: EvalResult) -> Lesson | None:
        """A short lesson from what the template did (None when there is nothing worth keeping)."""
        tid = _template_of(code)
        if tid is None:
            return None
        t = TEMPLATES[tid]
        where = f"{request.problem.family.value} on {Backend(request.backend).value}"
        direction = request.selection.direction
        if result.ok and result.speedup_eager is not None:
            if result.speedup_eager >= 1.1:
                return Lesson(direction, f"{tid} pays off for {where}",
                              f"Template {tid} ({t.summary}) reached {result.speedup_eager:.2f}x over eager "
                              f"on {request.problem.name}.")
            if result.speedup_eager < 0.9:
                return Lesson(direction, f"{tid} is slower for {where}",
                              f"Template {tid} ({t.summary}) was correct but only {result.speedup_eager:.2f}x "
                              f"of eager on {request.problem.name}.",
                              pitfalls="correct but slower than eager: prefer another template here")
            return None
        if not result.ok:
            why = result.diagnostics.message or result.status.value
            return Lesson(direction, f"{tid} failed for {where}",
                          f"Template {tid} ({t.summary}) ended {result.status.value} on {request.problem.name}.",
                          pitfalls=why[:200])
        return None


def _template_of(code: str) -> str | None:
    head = code[:400]
    for tid in TEMPLATES:
        if f"(template {tid}," in head:
            return tid
    return None


def _explain(request: ProposalRequest, plan: Plan, tid: str, ranked: list[str]) -> str:
    regions = ", ".join(
        f"region {r.index} ({'row' if r.is_row else 'elementwise'}, {len(r.inputs)} operands)" for r in plan.regions
    )
    kept = ", ".join(k.removeprefix("view:") for k in plan.kept) or "nothing"
    picked = "retrieved strategy" if tid in ranked else "default for the plan"
    return (
        f"offline proposer, direction {request.selection.direction}: template {tid} ({picked}: "
        f"{TEMPLATES[tid].summary}); fused {regions}; kept in PyTorch: {kept}; "
        f"ranked templates: {', '.join(ranked) or 'none'}"
    )
