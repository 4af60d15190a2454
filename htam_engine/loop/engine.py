"""The coarse-to-fine evolution loop of one session, as an asyncio task.

Each step: state -> select a direction -> retrieve strategies -> generate k samples
concurrently -> approval -> evaluate on the worker pool concurrently -> update memory
-> save the session (atomically, before the next step begins) -> next.

The engine never waits on a consumer: events go through `EventBus` (bounded,
coalescing buffers) and carry everything a front end shows. Front ends steer it with
typed commands: a `DecisionRequest`'s approve / veto / edit / skip, and the engine's
`approve_all`, `pause`, `resume`, `stop`, `set_budget`, `choose_direction`, `set_policy`
and `reevaluate`. A command that cannot be done now raises UsageError with the reason.
An error inside a step becomes an `EngineError` event and a failed step; the session goes on.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from htam_engine.errors import UsageError
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend, Bottleneck
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionRequest, Pending, check_policy, policy_verdict
from htam_engine.loop.bus import EventBus, Subscription
from htam_engine.loop.events import RunState
from htam_engine.loop.faults import HARNESS_FAULT, environment_fault
from htam_engine.loop.replay import session_events
from htam_engine.memory import (
    HTG,
    SelectConfig,
    estimate_bottleneck,
    make_state,
    record_lesson,
    retrieve,
    select_direction,
    update,
)
from htam_engine.memory.learn import NOTABLE, credited, proposal_status
from htam_engine.memory.select import lineage
from htam_engine.memory.types import HistoryEntry, Retrieval, Selection, State
from htam_engine.problems.model import Problem
from htam_engine.propose.base import KnowsMoves, MoveQuery, Moves, Proposal, ProposalRequest, Usage
from htam_engine.session import (
    candidate_code, history_of, memory_at, new_session, record_step, save_session, step_speedup, step_status,
)
from htam_engine.session.store import best_speedup
from htam_engine.session.model import (
    Action, Candidate, Decider, Decision, Policy, Session, SessionConfig, StepRecord,
)

ABLATIONS: dict[str, str] = {
    "flat": "no hierarchy: rank all strategies directly",
    "no-prefix": "direction from the current state only (no history prefix)",
    "no-position": "history prefix without position weights",
    "no-update": "memory is never updated",
    "random": "a direction drawn uniformly from those that apply in the state",
    "feedback-only": "no memory guidance: the prompt carries only the evaluation feedback",
    "best-of-n": "steps x samples independent samples in one step, no iteration",
}
# Ablations the selector/retriever implement themselves.
_SELECT_ABLATIONS = ("flat", "no-prefix", "no-position", "random")

RETRIEVE_K = 3  # strategies in a model's prompt; a proposer that knows its moves reads them all (_retrieve_k)
VETO_REASONS_IN_PROMPT = 5  # the most recent ones; older reasons live on in memory notes
STOPPED = Decision(Action.SKIP, Decider.STOP, reason="session stopped")


def check_ablation(name: str | None) -> str | None:
    if name is not None and name not in ABLATIONS:
        raise UsageError(f"unknown ablation {name!r} (choose from {', '.join(ABLATIONS)})")
    return name


def step_rng(seed: int, step: int, problem_id: str) -> random.Random:
    """One RNG per (seed, problem, step): a resumed session draws exactly what an uninterrupted one
    would, and the problems of a batch do not all draw the same sequence."""
    return random.Random(f"htam:{seed}:{problem_id}:{step}")


def _speedup(result: EvalResult | None) -> float | None:
    if result is None or not result.ok or result.speedup_eager is None:
        return None
    return float(result.speedup_eager)


class Engine:
    """Runs one session. Build it for a new session from (problem, config), or pass `session=`
    (a loaded Session) to resume; `htg` defaults to the seed (new) or the session's memory
    after its last step (resume). `hold_open`: when the budget is spent the run waits (an
    app's person may raise the budget) until `stop()`; otherwise `run()` returns."""

    def __init__(
        self,
        problem: Problem,
        config: SessionConfig | None = None,
        *,
        proposer: Any,
        pool: Any,
        htg: HTG | None = None,
        session_path: str | Path | None = None,
        policy: str | None = None,
        session: Session | None = None,
        steps: int | None = None,
        eval_config: EvalConfig | None = None,
        interactive: bool = False,
        bank_path: str | Path | None = None,
        select_config: SelectConfig | None = None,
        hold_open: bool = False,
    ):
        if session is None:
            if config is None:
                raise UsageError("an engine needs a session config or a session to resume")
            htg = htg if htg is not None else HTG.seed()
            session = new_session(problem, config, htg, path=session_path)
        else:
            htg = htg if htg is not None else memory_at(session, len(session.steps))
        self.problem = problem
        self.session = session
        self.config = session.config
        # metrics and resume read these from the session file alone
        self.config.extra.setdefault("level", problem.level)
        self.config.extra.setdefault("family", problem.family.value)
        check_ablation(self.config.ablation)
        self.htg = htg
        self.proposer = proposer
        self.pool = pool
        self.session_path = Path(session_path) if session_path else None
        self.bank_path = Path(bank_path) if bank_path else None
        self.interactive = interactive
        self.policy: Policy = check_policy(policy or self.config.policy)
        self.config.policy = self.policy
        self.eval_config = eval_config or EvalConfig(
            backend=self.config.backend, device=self.config.device, overrides=dict(problem.overrides),
            **dict(self.config.extra.get("eval") or {}),  # trials/timeout chosen for this session
        )
        ablation = self.config.ablation if self.config.ablation in _SELECT_ABLATIONS else None
        self.select_config = select_config or SelectConfig(ablation=ablation)
        done = len(session.steps)
        if self.config.ablation == "best-of-n":
            planned = 1  # one step of steps x samples samples
        elif steps is not None:
            planned = done + max(0, int(steps))
        elif done == 0:
            planned = self.config.steps
        else:
            planned = max(done, self.config.steps)  # resume: finish the planned budget
        self._planned_total = planned
        if self.config.ablation != "best-of-n":
            self.config.steps = planned
        self.hold_open = hold_open
        self.bus = EventBus()
        self.pending = Pending()  # the one list of open decision requests
        self._running = asyncio.Event()
        self._running.set()
        self._more = asyncio.Event()  # a held-open run: the budget was raised, or stop
        self._stop_reason: str | None = None
        self._forced: str | None = None
        self._finished = False
        self._in_step = False
        self.state = RunState.STARTING
        self.finish_reason: str | None = None
        self.owns_pool = False  # set by whoever built the pool for this engine alone

    async def aclose(self, *, now: bool = False) -> None:
        """Release what this engine owns (its worker pool, when it made one). `now`: kill the
        workers instead of letting them exit (a person quitting waits for nothing; a worker
        holds nothing that is not on disk already)."""
        if self.owns_pool and self.pool is not None:
            if now:
                self.pool.kill()
            else:
                await self.pool.close()

    # ---- consumers -------------------------------------------------------------------
    def events(self, maxsize: int | None = None) -> Subscription:
        """A new consumer of the event stream (call before `run()` to see every event)."""
        return self.bus.subscribe(maxsize)

    def _emit(self, event: ev.Event) -> None:
        self.bus.publish(event)

    # ---- commands --------------------------------------------------------------------
    def _set_state(self, state: RunState, detail: str = "") -> None:
        self.state = state
        self._emit(ev.EngineStateChanged(self._current_step(), state=state, detail=detail))

    def _emit_plan(self) -> None:
        self._emit(ev.PlanChanged(self._current_step(), steps_planned=self._planned_total, policy=self.policy))

    def pause(self) -> None:
        """Hold the run before its next step (the step under way finishes first)."""
        if self._finished:
            raise UsageError("the run has finished: nothing to pause")
        if self._stop_reason is not None:
            raise UsageError("the run is stopping")
        if self._running.is_set():
            self._running.clear()
            self._set_state(RunState.PAUSING if self._in_step else RunState.PAUSED, "after this step")

    def resume(self) -> None:
        if self._running.is_set():
            raise UsageError("the run is not paused")
        self._running.set()
        self._set_state(RunState.RUNNING)

    def stop(self, reason: str = "stopped") -> None:
        """Finish after the step in progress; pending decisions become skips by `stop`."""
        if self._stop_reason is None:
            self._stop_reason = reason
            if not self._finished:
                self._set_state(RunState.STOPPING, reason)
        self.pending.resolve_all(STOPPED)
        self._running.set()
        self._more.set()

    def set_budget(self, steps: int) -> None:
        """Set the session's planned number of steps (the N of "step k of N"); never below the
        steps done or under way. A held-open run whose budget was spent goes on."""
        if self._finished and not self.hold_open:
            raise UsageError("the run has finished")
        if self._stop_reason is not None:
            raise UsageError("the run is stopping")
        floor = len(self.session.steps) + (1 if self._in_step else 0)
        if steps < max(1, floor):
            raise UsageError(f"the budget must be at least {max(1, floor)} "
                             f"({len(self.session.steps)} steps done{', 1 under way' if self._in_step else ''})")
        self._planned_total = int(steps)
        self.config.steps = int(steps)
        self._emit_plan()
        if steps > len(self.session.steps):
            self._more.set()

    @property
    def steps_planned(self) -> int:
        return self._planned_total

    def choose_direction(self, name: str) -> None:
        """The next step uses this direction instead of the selector's choice."""
        if name not in self.htg.directions():
            raise UsageError(f"unknown direction {name!r}")
        self._forced = name

    def set_policy(self, name: str | Policy) -> None:
        """A new policy from now on; AUTO approves whatever is waiting, in the policy's name."""
        self.policy = check_policy(name)
        self.config.policy = self.policy
        self._emit_plan()
        if self.policy is Policy.AUTO:
            self.pending.resolve_all(Decision(Action.APPROVE, Decider.AUTO))

    def approve_all(self) -> None:
        """A person approves every waiting candidate (recorded as theirs) and every later one
        (the policy becomes auto, recorded as auto's)."""
        self.pending.resolve_all(Decision(Action.APPROVE, Decider.PERSON))
        self.set_policy(Policy.AUTO)

    async def reevaluate(self) -> EvalResult:
        """Evaluate the best candidate again (not a step, not recorded); its result comes as
        an EvaluationFinished event of sample -1."""
        code = self.session.best_code
        if not code:
            raise UsageError("no best candidate to re-evaluate yet")
        return await self._evaluate(self._current_step(), -1, code)

    def _current_step(self) -> int:
        return len(self.session.steps) + (0 if self._finished else 1)

    # ---- the loop --------------------------------------------------------------------
    async def run(self) -> Session:
        self.bus.bind_loop()
        s, c = self.session, self.config
        s.config.extra.pop("finished", None)  # set again when this run finishes
        self._emit(ev.SessionStarted(len(s.steps), session_path=str(self.session_path or ""), problem_id=s.problem.id,
                                     backend=c.backend, device=c.device, policy=self.policy, proposer=c.proposer,
                                     steps_planned=self._planned_total, history=session_events(s)))
        try:
            while True:
                reason = await self._steps_until_done()
                await self._finish(reason)
                if not self.hold_open or self._stop_reason is not None:
                    break
                await self._more.wait()  # a larger budget, or stop
                self._more.clear()
                if self._stop_reason is not None:
                    break
                self._finished = False
                self._set_state(RunState.RUNNING if self._running.is_set() else RunState.PAUSED)
            self._emit(ev.SessionFinished(len(s.steps), reason=self.finish_reason or "", best=s.best_result))
        finally:
            self._finished = True
            self.pending.resolve_all(STOPPED)
            self.bus.close()
        return s

    async def _steps_until_done(self) -> str:
        if self._running.is_set():
            self._set_state(RunState.RUNNING)
        while True:
            if self._stop_reason is None and not self._running.is_set():
                self._set_state(RunState.PAUSED)
                await self._running.wait()
            stop = self._should_stop()
            if stop:
                return stop
            await self._run_step(len(self.session.steps) + 1)

    async def _finish(self, reason: str) -> None:
        """The budget is spent (or the run stopped): save, merge the memory bank, say so."""
        s = self.session
        self._finished = True
        self.finish_reason = reason
        s.config.extra["finished"] = reason
        await self._save()
        await self._merge_bank()
        self._set_state(RunState.FINISHED, reason)

    def _should_stop(self) -> str | None:
        s, c = self.session, self.config
        if self._stop_reason is not None:
            return "stopped"
        if len(s.steps) >= self._planned_total:
            return "steps"
        if c.token_budget is not None and s.usage.prompt_tokens + s.usage.completion_tokens >= c.token_budget:
            return "tokens"
        if c.cost_budget is not None and s.usage.cost_usd >= c.cost_budget:
            return "cost"
        best = best_speedup(s)
        if c.target_speedup is not None and best is not None and best >= c.target_speedup:
            return "target"
        return None

    async def _run_step(self, step: int) -> None:
        started = time.time()
        self._in_step = True
        try:
            record = await self._step(step, started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one step's fault must not end the session
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self._emit(ev.EngineError(step, message=message, where="step"))
            record = self._failed_record(step, started, message)
        finally:
            self._in_step = False
        improved = record_step(self.session, record)
        self.session.updated_at = time.time()
        await self._save()
        s = self.session
        self._emit(ev.StepFinished(step, status=step_status(record), step_speedup=step_speedup(record),
                                   best_speedup=record.best_speedup, improved=improved, best_code=s.best_code,
                                   usage=s.usage))
        if not self._running.is_set() and self._stop_reason is None:
            self._set_state(RunState.PAUSED)

    async def _save(self) -> None:
        if self.session_path is None:
            return
        try:
            await asyncio.to_thread(save_session, self.session, self.session_path)
        except Exception as exc:  # noqa: BLE001 - reported; the run goes on in memory
            self._emit(ev.EngineError(len(self.session.steps), message=f"saving failed: {exc}", where="save"))
            return
        self._emit(ev.SessionSaved(len(self.session.steps), path=str(self.session_path),
                                   steps_saved=len(self.session.steps)))

    async def _merge_bank(self) -> None:
        if self.bank_path is None or self.config.ablation == "no-update":
            return
        from htam_engine.memory.bank import merge_into_bank

        try:  # under the bank's file lock: two sessions finishing together both land
            await asyncio.to_thread(merge_into_bank, self.session, self.bank_path)
        except Exception as exc:  # noqa: BLE001 - the session itself is safe on disk
            self._emit(ev.EngineError(len(self.session.steps), message=f"memory bank: {exc}", where="bank"))

    # ---- one step --------------------------------------------------------------------
    def _last_outcome(self) -> Candidate | None:
        for r in reversed(self.session.steps):
            if r.outcome is not None:
                return r.outcome
        return None

    def _last_failure(self) -> str:
        """Why the previous step's proposer gave no module (told to the next prompt), if it did not."""
        if not self.session.steps:
            return ""
        rec = self.session.steps[-1]
        if rec.outcome is not None and rec.outcome.code:
            return ""
        return next((c.failure for c in rec.candidates if c.failure), "")

    def _state(self) -> State:
        s = self.session
        backend = Backend(self.config.backend)
        best = s.best_result
        last = self._last_outcome()
        if best is not None:
            status, speedup, runtime = best.status.value, _speedup(best), best.runtime_ms
        elif last is not None and last.result is not None:
            status, speedup, runtime = last.result.status.value, None, last.result.ref_runtime_ms
        else:  # nothing evaluated yet (or only vetoed/skipped candidates)
            status, speedup, runtime = "start", None, None
        try:
            bottleneck = estimate_bottleneck(self.problem, runtime, self.config.device)
        except Exception:  # noqa: BLE001 - an estimate; unknown is an honest answer
            bottleneck = Bottleneck.UNKNOWN
        return make_state(status, self.problem.family, backend, bottleneck, speedup)

    def _veto_reasons(self) -> list[str]:
        reasons = [
            c.decision.reason
            for r in self.session.steps
            for c in r.candidates
            if c.decision is not None and c.decision.action is Action.VETO and c.decision.reason
        ]
        return reasons[-VETO_REASONS_IN_PROMPT:]

    def _previous_direction(self) -> str | None:
        for r in reversed(self.session.steps):
            if r.selection.direction:
                return r.selection.direction
        return None

    async def _step(self, step: int, started: float) -> StepRecord:
        s, c = self.session, self.config
        state = self._state()
        self._emit(ev.StepStarted(step, state=state))
        history = history_of(s)
        forced, self._forced = self._forced, None
        proposed = tuple(cd.code for r in s.steps for cd in r.candidates if cd.code and (
            cd.result is not None or (cd.decision is not None and cd.decision.action == "veto")))
        movable = await self._movable(step, state, proposed) if forced is None else None
        selection = select_direction(self.htg, state, history, rng=step_rng(c.seed, step, self.problem.id),
                                     config=self.select_config, forced=forced, movable=movable)
        self._emit(ev.DirectionSelected(step, selection=selection))
        retrieval = retrieve(self.htg, selection.direction, state, k=self._retrieve_k(),
                             ablation=self.select_config.ablation, selection=selection)
        self._emit(ev.StrategiesRetrieved(step, retrieval=retrieval))

        guided_selection, guided_retrieval = selection, retrieval
        if c.ablation == "feedback-only":  # the model sees only the feedback, no memory guidance
            guided_selection = Selection(direction="", scores=[], mode="feedback-only", ablation="feedback-only")
            guided_retrieval = Retrieval(direction="", strategies=[], notes=[])
        last = self._last_outcome()
        request = ProposalRequest(
            problem=self.problem, backend=Backend(c.backend), state=state,
            selection=guided_selection, retrieval=guided_retrieval,
            best_code=s.best_code, best_result=s.best_result,
            last_result=last.result if last else None, last_code=last.code if last else None,
            last_failure=self._last_failure(),
            veto_reasons=self._veto_reasons(), step=step, seed=c.seed, proposed=proposed,
        )
        k = c.samples * c.steps if c.ablation == "best-of-n" else c.samples
        k = max(1, k)
        previous_direction = self._previous_direction()
        candidates = list(await asyncio.gather(*(
            self._candidate(step, i, request, retrieval, previous_direction) for i in range(k)
        )))
        return await self._conclude(step, started, state, selection, retrieval, history, candidates, request)

    def _retrieve_k(self) -> int | None:
        """How many ranked strategies a step hands the proposer: a model's prompt takes the top
        RETRIEVE_K; a proposer that knows its moves (the offline one) takes the whole ranked list
        and the first strategy that moves this problem's code, so a direction is not lost because
        its top-ranked strategies are for plans this problem does not have (a convolution's layout
        ranked above a reduction's column block)."""
        return None if isinstance(self.proposer, KnowsMoves) else RETRIEVE_K

    async def _movable(self, step: int, state: State, proposed: tuple[str, ...]) -> Moves | None:
        """The directions the proposer says would change the code (KnowsMoves), asked with the
        strategies a step in each would retrieve; None when it cannot tell (a model)."""
        if not isinstance(self.proposer, KnowsMoves) or self.config.ablation == "feedback-only":
            return None
        ablation = self.select_config.ablation
        k = self._retrieve_k()
        retrievals = {g: retrieve(self.htg, g, state, k=k, ablation=ablation) for g in self.htg.directions()}
        query = MoveQuery(self.problem, Backend(self.config.backend), self.session.best_code, proposed, retrievals)
        try:
            return await self.proposer.movable(query)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the step still runs, choosing among every direction
            self._emit(ev.EngineError(step, message=f"proposer: cannot tell which directions move: {exc}",
                                      where="propose"))
            return None

    async def _candidate(self, step: int, sample: int, base: ProposalRequest, retrieval: Retrieval,
                         previous_direction: str | None) -> Candidate:
        request = replace(base, sample=sample, seed=base.seed * 1_000_003 + step * 101 + sample)

        def on_token(text: str) -> None:
            self._emit(ev.TokensStreamed(step, sample=sample, text=text))

        try:
            proposal: Proposal = await self.proposer.propose(request, on_token)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a proposer fault fails this sample only
            self._emit(ev.EngineError(step, message=f"proposer: {exc}", where="propose"))
            proposal = Proposal(code=None, failure=f"proposer error: {exc}")
        cand = Candidate(sample=sample, code=proposal.code, prompt=proposal.prompt,
                         model_output=proposal.raw_output, failure=proposal.failure,
                         template=proposal.template, usage=proposal.usage or Usage(), outcome=proposal.kind.value)
        self._emit(ev.CandidateProposed(step, sample=sample, code=cand.code, failure=cand.failure))
        if cand.code is None:
            return cand
        decision = await self._approve(step, sample, cand, retrieval, previous_direction)
        cand.decision = decision
        self._emit(ev.DecisionMade(step, sample=sample, decision=decision, pending=self.pending.open()))
        if decision.action in (Action.VETO, Action.SKIP):
            return cand
        cand.result = await self._evaluate(step, sample, candidate_code(cand))  # the edit, if any
        return cand

    async def _approve(self, step: int, sample: int, cand: Candidate, retrieval: Retrieval,
                       previous_direction: str | None) -> Decision:
        code = cand.code or ""
        findings = None
        if self.policy is Policy.AUTO_STATIC:
            from htam_engine.evaluate.checks import static_findings

            findings = static_findings(code, self.config.backend)
        verdict = policy_verdict(self.policy, direction=retrieval.direction, previous_direction=previous_direction,
                                 static_findings=findings)
        if verdict.decision is not None:
            return verdict.decision
        if self._stop_reason is not None:
            return STOPPED
        if not self.interactive:
            # Headless: nobody to ask. Refuse the candidate the policy would not pass on its own,
            # with the policy's reason (memory learns from it like from a person's veto).
            return Decision(Action.VETO, Decider(self.policy.value), reason=verdict.why)
        request = DecisionRequest(step, sample, code, best_code=self.session.best_code, direction=retrieval.direction,
                                  strategies=[st.title for st in retrieval.strategies], template=cand.template,
                                  why=verdict.why)
        self.pending.add(request)
        self._emit(ev.ApprovalRequested(step, sample=sample, request=request, pending=self.pending.open()))
        try:
            return await request.wait()
        finally:
            self.pending.remove(request)

    async def _evaluate(self, step: int, sample: int, code: str) -> EvalResult:
        began = {"stage": "", "at": time.time()}

        def on_progress(stage: str, timings: list[float] | None = None) -> None:
            if stage != began["stage"]:
                began["stage"], began["at"] = stage, time.time()
            self._emit(ev.EvaluationProgress(step, sample=sample, stage=str(stage), stage_started=began["at"],
                                             timings=list(timings or [])))

        try:
            result = await self.pool.evaluate(self.problem, code, self.eval_config, on_progress=on_progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a harness fault is reported, not the candidate's fault
            self._emit(ev.EngineError(step, message=f"evaluation: {exc}", where="evaluate"))
            result = EvalResult.failure(Status.HARNESS_ERROR, f"{HARNESS_FAULT} {exc}",
                                        device=self.config.device, backend=self.config.backend)
        self._emit(ev.EvaluationFinished(step, sample=sample, result=result))
        return result

    async def _conclude(self, step: int, started: float, state: State, selection: Selection,
                        retrieval: Retrieval, history: list[HistoryEntry], candidates: list[Candidate],
                        request: ProposalRequest) -> StepRecord:
        s, c = self.session, self.config
        chosen = choose_outcome(candidates)
        outcome = candidates[chosen] if chosen is not None else None
        prev_best = best_speedup(s)
        status, new_speedup, veto_reason = outcome_status(outcome)
        fault = environment_fault(outcome.result) if outcome is not None and outcome.result is not None else None
        if fault is not None:  # the machine's fault, not the strategy's: memory learns nothing from it
            self._emit(ev.EngineError(step, message=f"{fault}; the memory is not updated for this step",
                                      where="environment"))
            status = None
        reward, delta, new_strategy = 0.0, {}, None
        if status is not None:  # skipped steps teach nothing
            delta = update(  # the move is recorded from the one that made the best it was tried on
                self.htg, history=lineage(history), state=state, direction=selection.direction,
                strategies=credited(retrieval.strategies, outcome.template if outcome else None), status=status,
                prev_speedup=prev_best, new_speedup=new_speedup, family=self.problem.family,
                backend=Backend(c.backend), veto_reason=veto_reason, session_id=s.id, step=step,
                ablation="no-update" if c.ablation == "no-update" else None,
            )
            reward = float(delta.get("reward", 0.0))
            if outcome is not None and outcome.result is not None and outcome.result.ok and reward >= NOTABLE \
                    and c.ablation not in ("no-update", "feedback-only") and selection.direction:
                new_strategy = await self._reflect(step, request, outcome, selection.direction, delta)
            self._emit(ev.MemoryUpdated(step, reward=reward, direction=selection.direction,
                                        new_strategy=new_strategy))
        return StepRecord(
            step=step, state=state, selection=selection, retrieval=retrieval, candidates=candidates,
            chosen=chosen, reward=reward if math.isfinite(reward) else 0.0, started_at=started,
            finished_at=time.time(), new_strategy=new_strategy, memory_delta=delta,
        )

    async def _reflect(self, step: int, request: ProposalRequest, outcome: Candidate, direction: str,
                       delta: dict[str, Any]) -> str | None:
        """Ask the proposer for a reusable lesson after a notable success; it becomes a strategy."""
        try:
            lesson = await self.proposer.reflect(request, candidate_code(outcome) or "", outcome.result)
            if lesson is None:
                return None
            target = lesson.direction if lesson.direction in self.htg.directions() else direction
            return record_lesson(self.htg, delta, direction=target, title=lesson.title,
                                 description=lesson.description, pitfalls=lesson.pitfalls,
                                 template=outcome.template,
                                 families=[self.problem.family.value], backends=[self.config.backend])
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a lesson is a bonus; the step stands without it
            self._emit(ev.EngineError(step, message=f"reflection: {exc}", where="reflect"))
            return None

    def _failed_record(self, step: int, started: float, message: str) -> StepRecord:
        try:
            state = self._state()
        except Exception:  # noqa: BLE001 - the record must still be written
            state = State("start", self.problem.family, Bottleneck.UNKNOWN, "none", Backend(self.config.backend))
        return StepRecord(
            step=step, state=state, selection=Selection(direction="", scores=[], mode="error", reason=message),
            retrieval=Retrieval(direction="", strategies=[], notes=[]), candidates=[], chosen=None,
            started_at=started, finished_at=time.time(),
        )


def choose_outcome(candidates: list[Candidate]) -> int | None:
    """The sample that becomes the step's outcome: the fastest correct one; else the first
    evaluated failure; else a veto; else a proposer failure; None when everything was skipped."""
    ok = [i for i, cd in enumerate(candidates) if cd.result is not None and cd.result.ok]
    if ok:
        return max(ok, key=lambda i: _speedup(candidates[i].result) or 0.0)
    for pred in (
        lambda cd: cd.result is not None,
        lambda cd: cd.decision is not None and cd.decision.action is Action.VETO,
        lambda cd: cd.code is None,
    ):
        for i, cd in enumerate(candidates):
            if pred(cd):
                return i
    return None


def outcome_status(outcome: Candidate | None) -> tuple[str | None, float | None, str | None]:
    """(status for memory, new speedup, veto reason); status None = nothing to learn."""
    if outcome is None:
        return None, None, None
    if outcome.result is not None:
        return outcome.result.status.value, _speedup(outcome.result), None
    if outcome.decision is not None and outcome.decision.action is Action.VETO:
        return "vetoed", None, outcome.decision.reason or "vetoed"
    if outcome.code is None:  # the proposer produced no candidate (and may have said why)
        return proposal_status(outcome.outcome), None, None
    return None, None, None

