"""The offline proposer: the HTG's strategies become moves in a real kernel design space.

No network and no key. For each request:

1. the problem is traced and lowered to a plan (kept PyTorch ops plus fused regions) and the
   plan's design space on the backend (design.plan_space): the knobs its generators read;
2. the current position is the settings of the session's best candidate (its docstring
   carries them), or the plan's defaults before there is one;
3. the retrieved strategies, in rank order, name moves (a strategy's `template` is a move id,
   moves.py): each lists the settings it reaches from the current position, best guess first.
   Settings already evaluated in the session are skipped. Sample k of a step takes the k-th
   remaining setting: the first strategy's move is autotuned over the samples, then the next's;
4. the chosen settings are written as a complete ModelNew module (module.build_module).

When no retrieved strategy has a move that changes this plan the answer is `NO_MOVE`; when
their moves have nothing left to change, `EXHAUSTED` (typed outcomes the memory learns from).
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from itertools import islice

from htam_engine.evaluate.result import EvalResult
from htam_engine.families import Backend, ProposalOutcome
from htam_engine.memory.types import Retrieval
from htam_engine.problems.model import Problem, ProblemError
from htam_engine.propose.base import Lesson, MoveQuery, Moves, Proposal, ProposalRequest, TokenSink
from htam_engine.propose.offline.decompose import Unsupported
from htam_engine.propose.offline.design import LAYOUTS, plan_space
from htam_engine.propose.offline.lower import ALL_LAYOUTS, Plan, lower
from htam_engine.propose.offline.module import build_module
from htam_engine.propose.offline.moves import MOVES, Move, MoveKind, move_of, options
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings, Space, parse_move, parse_settings
from htam_engine.propose.offline.trace import trace_problem

NAME = "offline"
DEFAULT_MOVE = "fuse_chain"  # what the plan's defaults are called when nothing asked for a move


@dataclass(slots=True)
class Generated:
    code: str
    move: str
    settings: Settings
    plan: Plan


@dataclass(slots=True)
class Pick:
    """One candidate the proposer can write: settings reached by a strategy's move."""

    settings: Settings
    move: str
    strategy: str | None = None


_PLANS: dict[str, Plan] = {}


def _problem_key(problem: Problem) -> str:
    return hashlib.sha256(f"{problem.source}\0{sorted(problem.overrides.items())!r}".encode()).hexdigest()


def plan_problem(problem: Problem, backend: Backend | str | None = None, reassociate: bool = False) -> Plan:
    """Trace and lower for a backend (cached per problem source, overrides and what the backend's
    generators cover); raises Unsupported with a reason."""
    layouts = ALL_LAYOUTS if backend is None else LAYOUTS[Backend(backend)]
    key = _problem_key(problem) + ",".join(sorted(layouts)) + ("+sum_first" if reassociate else "")
    if key not in _PLANS:
        try:
            traced = trace_problem(problem)
            try:
                _PLANS[key] = lower(traced, layouts, reassociate)
            except Unsupported:
                if not traced.split_biases:
                    raise
                # the bias's add may not fit where the convolution's output went: the problem's own call
                _PLANS[key] = lower(trace_problem(problem, split_bias=False), layouts, reassociate)
        except ProblemError as exc:
            raise Unsupported(f"problem does not load ({exc})") from None
    return _PLANS[key]


REWRITE = KnobSpec(Knob.GEMM_REWRITE, ("off", "sum_first"), "off", "a product summed over its columns")


def problem_design(problem: Problem, backend: Backend) -> tuple[dict[str, Plan], Space]:
    """The plans a problem can be written as (by gemm.rewrite) and the union of their spaces."""
    plans = {"off": plan_problem(problem, backend)}
    space = plan_space(plans["off"], backend)
    if plans["off"].reassociable:
        plans["sum_first"] = plan_problem(problem, backend, reassociate=True)
        for spec in plan_space(plans["sum_first"], backend):
            space.add(spec)
        space.add(REWRITE)
    return plans, space


def _plan_for(plans: dict[str, Plan], settings: Settings) -> Plan:
    return plans[str(settings.get(Knob.GEMM_REWRITE, "off"))]


def generate(problem: Problem, backend: Backend | str, move: str | None = None,
             settings: dict | None = None) -> Generated:
    """One candidate: the plan's defaults, one move applied to them, and/or explicit knob values.
    Raises Unsupported (a move that does not change this plan on this backend, an unknown knob)."""
    backend = Backend(backend)
    plans, space = problem_design(problem, backend)
    chosen = space.defaults()
    if move is not None and move != DEFAULT_MOVE:
        if move not in MOVES:
            raise Unsupported(f"unknown move {move!r}")
        reached = options(MOVES[move], space, chosen)
        if not reached:
            raise Unsupported(f"move {move} does not change this problem's code on {backend.value}")
        chosen = reached[0]
    if settings:
        unknown = [k for k in settings if k not in space]
        if unknown:
            raise Unsupported(f"knobs {', '.join(str(getattr(k, 'value', k)) for k in unknown)} are not in this "
                              f"problem's space on {backend.value}")
        chosen = chosen.with_(settings)
        if not space.valid(chosen):
            raise Unsupported(f"settings {chosen} are outside the space on {backend.value}")
    name = move or DEFAULT_MOVE
    plan = _plan_for(plans, chosen)
    return Generated(build_module(problem, plan, backend, chosen, name), name, chosen, plan)


async def _emit(sink: TokenSink | None, text: str) -> None:
    if sink is None:
        return
    for start in range(0, len(text), 2048):
        result = sink(text[start:start + 2048])
        if inspect.isawaitable(result):
            await result


@dataclass(slots=True)
class _Trail:
    """Settings proposed in earlier steps of one session (used when the request does not list
    what the session evaluated)."""

    by_step: dict[int, set[str]] = field(default_factory=dict)  # settings keys
    codes: dict[int, set[str]] = field(default_factory=dict)  # code without the docstring

    def before(self, step: int) -> set[str]:
        return {k for s, keys in self.by_step.items() if s < step for k in keys}


class OfflineProposer:
    """Proposer protocol implementation (see propose/base.py)."""

    name = NAME

    def __init__(self) -> None:
        self._trails: dict[tuple[str, str], _Trail] = {}

    async def propose(self, request: ProposalRequest, on_token: TokenSink | None = None) -> Proposal:
        backend = Backend(request.backend)
        try:
            plans, space = problem_design(request.problem, backend)
        except Unsupported as exc:
            return self._no_code(ProposalOutcome.UNSUPPORTED, f"offline proposer: {exc}")
        except Exception as exc:  # noqa: BLE001 - a tracing fault fails this step, not the session
            return self._no_code(ProposalOutcome.ERROR, f"offline proposer: cannot analyse the problem: {exc!r}"[:300])
        base = _position(request.best_code, space)
        seen, seen_codes, trail = self._seen(request, space)
        picks, moves_named = _reached(request.retrieval.strategies, space, base, seen)
        # sample k takes the k-th pick whose code is new (settings a plan does not read write equal code)
        try:
            pick, code = next(islice(_new_codes(request.problem, plans, backend, picks, seen_codes), request.sample,
                                     None), (None, None))
        except _MoveFailed as failed:
            if isinstance(failed.cause, Unsupported):
                return self._no_code(ProposalOutcome.UNSUPPORTED, f"offline proposer: {failed.cause}", failed.move)
            return self._no_code(ProposalOutcome.ERROR, f"offline proposer: internal error in move "
                                 f"{failed.move}: {failed.cause!r}"[:300], failed.move)
        if pick is None:
            if not moves_named:
                names = ", ".join(s.template or "none" for s in request.retrieval.strategies) or "none retrieved"
                return self._no_code(ProposalOutcome.NO_MOVE, f"offline proposer: no retrieved strategy moves this "
                                     f"problem's code on {backend.value} (moves: {names})")
            return self._no_code(ProposalOutcome.EXHAUSTED, f"offline proposer: moves {', '.join(moves_named)} have "
                                 f"nothing left to change from the current best (all reachable settings evaluated)")
        trail.by_step.setdefault(request.step, set()).add(pick.settings.key())
        trail.codes.setdefault(request.step, set()).add(_without_header(code))
        prompt = _explain(request, _plan_for(plans, pick.settings), base, pick)
        await _emit(on_token, code)
        return Proposal(code=code, prompt=prompt, raw_output=code, model=NAME, template=pick.move,
                        outcome=ProposalOutcome.CANDIDATE, strategy=pick.strategy)

    async def movable(self, query: MoveQuery) -> Moves:
        """The directions whose retrieved strategies reach code the session has not evaluated (the
        others would answer NO_MOVE or EXHAUSTED: the same test propose makes), each with the
        strategy whose move its step would write first."""
        backend = Backend(query.backend)
        try:
            plans, space = problem_design(query.problem, backend)
        except Exception:  # noqa: BLE001 - a problem the proposer cannot plan: every step says why
            return Moves(frozenset(query.retrievals))
        codes = [*query.proposed, *([query.best_code] if query.best_code else [])]
        seen, bodies = _settings_seen(codes, space), {_without_header(c) for c in codes}
        base = _position(query.best_code, space)
        directions: set[str] = set()
        applies: dict[str, str] = {}
        for g, retrieval in query.retrievals.items():
            picks = _reached(retrieval.strategies, space, base, seen)[0]
            try:
                first = next(_new_codes(query.problem, plans, backend, picks, bodies), None)
            except _MoveFailed:
                directions.add(g)  # its step reports the fault
                continue
            if first is not None:
                directions.add(g)
                applies[g] = first[0].strategy
        return Moves(frozenset(directions), applies)

    def _no_code(self, outcome: ProposalOutcome, failure: str, move: str | None = None) -> Proposal:
        return Proposal(code=None, failure=failure, model=NAME, template=move, outcome=outcome)

    def _seen(self, request: ProposalRequest, space: Space) -> tuple[set[str], set[str], _Trail]:
        """Settings keys and code (without the docstring) the session already has: never proposed again."""
        trail = self._trails.setdefault((_problem_key(request.problem), Backend(request.backend).value), _Trail())
        codes = list(request.proposed or ()) + [c for c in (request.best_code, request.last_code) if c]
        seen = _settings_seen(codes, space)
        bodies = {_without_header(c) for c in codes}
        if request.proposed is None:  # the caller did not say what the session has: what this proposer wrote
            seen |= trail.before(request.step)
            bodies |= {c for step, cs in trail.codes.items() if step < request.step for c in cs}
        return seen, bodies, trail

    async def reflect(self, request: ProposalRequest, code: str, result: EvalResult) -> Lesson | None:
        """A short lesson from what a move did (None when there is nothing worth keeping)."""
        move_id = parse_move(code)
        move = MOVES.get(move_id or "")
        settings = parse_settings(code)
        if move is None or settings is None:
            return None
        where = f"{request.problem.family.value} on {Backend(request.backend).value}"
        knobs = ", ".join(f"{k.value}={settings[k]}" for k in move.knobs if k in settings.values) or str(settings)
        direction = move.direction
        if result.ok and result.speedup_eager is not None:
            if result.speedup_eager >= 1.1:
                return Lesson(direction, f"{move_id} pays off for {where}",
                              f"Move {move_id} ({move.summary}; {knobs}) reached {result.speedup_eager:.2f}x over "
                              f"eager on {request.problem.name}.")
            if result.speedup_eager < 0.9:
                return Lesson(direction, f"{move_id} is slower for {where}",
                              f"Move {move_id} ({move.summary}; {knobs}) was correct but only "
                              f"{result.speedup_eager:.2f}x of eager on {request.problem.name}.",
                              pitfalls="correct but slower than eager: prefer another move here")
            return None
        if not result.ok:
            why = result.diagnostics.message or result.status.value
            return Lesson(direction, f"{move_id} failed for {where}",
                          f"Move {move_id} ({move.summary}; {knobs}) ended {result.status.value} on "
                          f"{request.problem.name}.", pitfalls=why[:200])
        return None


def _without_header(code: str) -> str:
    """A candidate's code without its docstring (which names the move and every setting)."""
    if code.startswith('"""'):
        end = code.find('"""', 3)
        if end > 0:
            return code[end + 3:]
    return code


def _position(best_code: str | None, space: Space) -> Settings:
    """Where the search stands: the best candidate's settings, or the defaults."""
    best = parse_settings(best_code)
    return best if best is not None and space.valid(best) else space.defaults()


def _settings_seen(codes: list[str], space: Space) -> set[str]:
    """The keys of the settings these candidates were written with (this plan's space only)."""
    return {s.key() for s in (parse_settings(c) for c in codes) if s is not None and space.valid(s)}


def _reached(strategies: list, space: Space, base: Settings, seen: set[str]) -> tuple[list[Pick], list[str]]:
    """Candidates in the order a step's samples take them (the settings the strategies' moves reach
    from `base` that are not in `seen`, best first), and the moves that change this plan's code."""
    picks: list[Pick] = []
    taken = set(seen)
    named: list[str] = []
    if not strategies:  # nothing retrieved (a feedback-only run): the plan as fused
        defaults = space.defaults()
        return ([Pick(defaults, DEFAULT_MOVE)] if defaults.key() not in taken else []), [DEFAULT_MOVE]
    for strategy in strategies:
        move = move_of(strategy.template)
        if move is None:
            continue
        reached = options(move, space, base)
        if move.id == DEFAULT_MOVE and base == space.defaults():
            reached = [base]  # the fused plan itself, when the session has not evaluated it yet
        if not _moves_here(move, space):
            continue
        named.append(move.id)  # it moves this plan's code (from here, or it already has)
        for settings in reached:
            if settings.key() not in taken:
                taken.add(settings.key())
                picks.append(Pick(settings, move.id, strategy.id))
    return picks, named


class _MoveFailed(Exception):
    """Writing a move's code failed (Unsupported, or a fault of the generator)."""

    def __init__(self, move: str, cause: Exception):
        super().__init__(move, cause)
        self.move, self.cause = move, cause


def _new_codes(problem: Problem, plans, backend: Backend, picks: list[Pick], seen_bodies: set[str]):
    """(pick, code) for each pick whose code (docstring aside) is new, in order: settings a plan does
    not read write the same code as settings already evaluated."""
    written: set[str] = set()
    for candidate in picks:
        try:
            text = build_module(problem, _plan_for(plans, candidate.settings), backend, candidate.settings,
                                candidate.move)
        except Exception as exc:  # noqa: BLE001 - the caller says which move failed and how
            raise _MoveFailed(candidate.move, exc) from exc
        body = _without_header(text)
        if body in seen_bodies or body in written:
            continue
        written.add(body)
        yield candidate, text


def _moves_here(move: Move, space: Space) -> bool:
    """Whether the move changes this plan's code somewhere in its space (a knob it sets has a choice)."""
    if move.kind is MoveKind.RESET:
        return True
    if move.kind is MoveKind.SET:
        return any(k in space and v in space.specs[k].values for k, v in move.values.items())
    return any(k in space and len(space.specs[k].values) > 1 for k in move.knobs)


def _explain(request: ProposalRequest, plan: Plan, base: Settings, pick: Pick) -> str:
    regions = ", ".join(
        f"region {r.index} ({'row' if r.is_row else 'elementwise'}, {len(r.inputs)} operands)" for r in plan.regions
    )
    kept = ", ".join(k.removeprefix("view:") for k in plan.kept) or "nothing"
    move = MOVES.get(pick.move)
    changed = ", ".join(f"{k.value}: {base.get(k)} -> {v}" for k, v in pick.settings.changed(base).items()) or "none"
    return (
        f"offline proposer, direction {request.selection.direction or '-'}: move {pick.move} "
        f"({move.summary if move else 'the plan as fused'}) from strategy {pick.strategy or '-'}; "
        f"changed {changed}; settings {pick.settings}; fused {regions}; kept in PyTorch: {kept}"
    )
