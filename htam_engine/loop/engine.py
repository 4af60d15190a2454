"""The coarse-to-fine evolution loop of one session, as an asyncio task.

Each step: state -> select a direction -> retrieve strategies -> generate k samples
concurrently -> approval -> evaluate on the worker pool concurrently -> update memory
-> save the session (atomically, before the next step begins) -> next.

The engine never waits on a consumer: events go through `EventBus` (bounded,
coalescing buffers). Front ends steer it with commands (`decide`, `pause`,
`resume`, `stop`, `set_steps`, `force_direction`, `evaluate_now`, `set_policy`).
An error inside a step becomes an `EngineError` event and a failed step; the
session goes on.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from htam_engine.cli.errors import UsageError
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend, Bottleneck
from htam_engine.loop import events as ev
from htam_engine.loop.approval import Approvals, check_policy, policy_verdict
from htam_engine.loop.bus import EventBus, Subscription
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
from htam_engine.memory.types import HistoryEntry, Retrieval, Selection, State
from htam_engine.problems.model import Problem
from htam_engine.propose.base import Proposal, ProposalRequest, Usage
from htam_engine.session import candidate_code, memory_at, new_session, record_step, save_session
from htam_engine.session.store import best_speedup
from htam_engine.session.model import Candidate, Decision, Session, SessionConfig, StepRecord

ABLATIONS: dict[str, str] = {
    "flat": "no hierarchy: rank all strategies directly",
    "no-prefix": "direction from the current state only (no history prefix)",
    "no-position": "history prefix without position weights",
    "no-update": "memory is never updated",
    "feedback-only": "no memory guidance: the prompt carries only the evaluation feedback",
    "best-of-n": "steps x samples independent samples in one step, no iteration",
}
# Ablations the selector/retriever implement themselves.
_SELECT_ABLATIONS = ("flat", "no-prefix", "no-position")

RETRIEVE_K = 3
VETO_REASONS_IN_PROMPT = 5  # the most recent ones; older reasons live on in memory notes


def check_ablation(name: str | None) -> str | None:
    if name is not None and name not in ABLATIONS:
        raise UsageError(f"unknown ablation {name!r} (choose from {', '.join(ABLATIONS)})")
    return name


def step_rng(seed: int, step: int) -> random.Random:
    """One RNG per (seed, step): a resumed session draws exactly what an uninterrupted one would."""
    return random.Random(f"htam:{seed}:{step}")


def _speedup(result: EvalResult | None) -> float | None:
    if result is None or not result.ok or result.speedup_eager is None:
        return None
    return float(result.speedup_eager)


class Engine:
    """Runs one session. Build it for a new session from (problem, config), or pass `session=`
    (a loaded Session) to resume; `htg` defaults to the seed (new) or the session's memory
    after its last step (resume)."""

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
        self.policy = check_policy(policy or self.config.policy)
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
        self.bus = EventBus()
        self.approvals = Approvals()
        self._running = asyncio.Event()
        self._running.set()
        self._stop_reason: str | None = None
        self._forced: str | None = None
        self._finished = False
        self.finish_reason: str | None = None
        self.owns_pool = False  # set by whoever built the pool for this engine alone

    async def aclose(self) -> None:
        """Release what this engine owns (its worker pool, when it made one)."""
        if self.owns_pool and self.pool is not None:
            await self.pool.close()

    # ---- consumers -------------------------------------------------------------------
    def events(self, maxsize: int | None = None) -> Subscription:
        """A new consumer of the event stream (call before `run()` to see every event)."""
        return self.bus.subscribe(maxsize)

    def _emit(self, event: ev.Event) -> None:
        self.bus.publish(event)

    # ---- commands --------------------------------------------------------------------
    def decide(self, request_id: str, decision: Decision) -> None:
        self.approvals.decide(request_id, decision)

    def pause(self) -> None:
        if self._running.is_set() and not self._finished:
            self._running.clear()
            self._emit(ev.EngineStateChanged(self._current_step(), state="paused", detail="after this step"))

    def resume(self) -> None:
        if not self._running.is_set():
            self._running.set()
            self._emit(ev.EngineStateChanged(self._current_step(), state="running"))

    def stop(self, reason: str = "stopped") -> None:
        """Finish after the step in progress; pending approvals become skips."""
        if self._stop_reason is None:
            self._stop_reason = reason
            self._emit(ev.EngineStateChanged(self._current_step(), state="stopping", detail=reason))
        self.approvals.decide_all(Decision("skip", by="stop", reason="session stopped"))
        self._running.set()

    def set_steps(self, n: int) -> None:
        """Set the session's planned number of steps (the N of "step k of N")."""
        if n < len(self.session.steps):
            raise UsageError(f"the session already has {len(self.session.steps)} steps")
        self._planned_total = int(n)
        self.config.steps = int(n)
        self._emit(ev.EngineStateChanged(self._current_step(), state="running", detail=f"steps={n}"))

    @property
    def steps_planned(self) -> int:
        return self._planned_total

    def force_direction(self, name: str) -> None:
        """The next step uses this direction instead of the selector's choice."""
        if name not in self.htg.directions():
            raise UsageError(f"unknown direction {name!r}")
        self._forced = name

    def set_policy(self, name: str) -> None:
        self.policy = check_policy(name)
        self.config.policy = self.policy
        self._emit(ev.EngineStateChanged(self._current_step(), state="running", detail=f"policy={name}"))
        if name == "auto":  # approve-all: whatever is waiting goes ahead
            self.approvals.decide_all(Decision("approve", by="auto"))

    async def evaluate_now(self, code: str) -> EvalResult:
        """Evaluate code outside the step flow (e.g. re-time the current best); not recorded."""
        step = self._current_step()
        return await self._evaluate(step, -1, code)

    def _current_step(self) -> int:
        return len(self.session.steps) + (0 if self._finished else 1)

    # ---- the loop --------------------------------------------------------------------
    async def run(self) -> Session:
        self.bus.bind_loop()
        s = self.session
        s.config.extra.pop("finished", None)  # set again when this run finishes
        self._emit(ev.SessionStarted(0, session_path=str(self.session_path or ""), problem_id=s.problem.id,
                                     steps_planned=self._planned_total))
        self._emit(ev.EngineStateChanged(0, state="running"))
        reason = "steps"
        try:
            while True:
                if self._stop_reason is None and not self._running.is_set():
                    await self._running.wait()
                stop = self._should_stop()
                if stop:
                    reason = stop
                    break
                await self._run_step(len(s.steps) + 1)
            self._finished = True
            self.finish_reason = reason
            s.config.extra["finished"] = reason
            await self._save()
            await self._merge_bank()
            self._emit(ev.EngineStateChanged(len(s.steps), state="finished", detail=reason))
            self._emit(ev.SessionFinished(len(s.steps), reason=reason, best=s.best_result))
        finally:
            self._finished = True
            self.bus.close()
        return s

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
        try:
            record = await self._step(step, started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one step's fault must not end the session
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self._emit(ev.EngineError(step, message=message, where="step"))
            record = self._failed_record(step, started, message)
        improved = record_step(self.session, record)
        self.session.updated_at = time.time()
        await self._save()
        self._emit(ev.StepFinished(step, best_speedup=record.best_speedup, improved=improved))

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
    def _history(self) -> list[HistoryEntry]:
        return [
            HistoryEntry(state=r.state, direction=r.selection.direction, reward=r.reward)
            for r in self.session.steps
            if r.selection.direction
        ]

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
            if c.decision is not None and c.decision.action == "veto" and c.decision.reason
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
        history = self._history()
        forced, self._forced = self._forced, None
        selection = select_direction(self.htg, state, history, rng=step_rng(c.seed, step),
                                     config=self.select_config, forced=forced)
        self._emit(ev.DirectionSelected(step, selection=selection))
        retrieval = retrieve(self.htg, selection.direction, state, k=RETRIEVE_K,
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
            veto_reasons=self._veto_reasons(), step=step, seed=c.seed,
            proposed=tuple(cd.code for r in s.steps for cd in r.candidates if cd.code and (
                cd.result is not None or (cd.decision is not None and cd.decision.action == "veto"))),
        )
        k = c.samples * c.steps if c.ablation == "best-of-n" else c.samples
        k = max(1, k)
        previous_direction = self._previous_direction()
        candidates = list(await asyncio.gather(*(
            self._candidate(step, i, request, selection.direction, previous_direction) for i in range(k)
        )))
        return await self._conclude(step, started, state, selection, retrieval, history, candidates, request)

    async def _candidate(self, step: int, sample: int, base: ProposalRequest, direction: str,
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
        decision = await self._approve(step, sample, cand.code, direction, previous_direction)
        cand.decision = decision
        self._emit(ev.DecisionMade(step, sample=sample, request_id=f"{step}-{sample}", action=decision.action,
                                   reason=decision.reason, by=decision.by))
        if decision.action in ("veto", "skip"):
            return cand
        cand.result = await self._evaluate(step, sample, candidate_code(cand))  # the edit, if any
        return cand

    async def _approve(self, step: int, sample: int, code: str, direction: str,
                       previous_direction: str | None) -> Decision:
        findings = None
        if self.policy == "auto-static":
            from htam_engine.evaluate.checks import static_findings

            findings = static_findings(code, self.config.backend)
        verdict = policy_verdict(self.policy, direction=direction, previous_direction=previous_direction,
                                 static_findings=findings)
        if verdict.decision is not None:
            return verdict.decision
        if self._stop_reason is not None:
            return Decision("skip", by="stop", reason="session stopped")
        if not self.interactive:
            # Headless: nobody to ask. Refuse the candidate the policy would not pass on its own,
            # with the policy's reason (memory learns from it like from a person's veto).
            return Decision("veto", by=self.policy, reason=verdict.why)
        request_id = f"{step}-{sample}"
        fut = self.approvals.open(request_id)
        previous = self.session.best_code
        self._emit(ev.ApprovalRequested(step, sample=sample, request_id=request_id, code=code,
                                        previous_code=previous, pending=len(self.approvals.pending_ids())))
        try:
            return await fut
        finally:
            self.approvals.close(request_id)

    async def _evaluate(self, step: int, sample: int, code: str) -> EvalResult:
        def on_progress(stage: str, timings: list[float] | None = None) -> None:
            self._emit(ev.EvaluationProgress(step, sample=sample, stage=stage, timings=list(timings or [])))

        try:
            result = await self.pool.evaluate(self.problem, code, self.eval_config, on_progress=on_progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a harness fault is reported, not the candidate's fault
            self._emit(ev.EngineError(step, message=f"evaluation: {exc}", where="evaluate"))
            result = EvalResult.failure(Status.RUNTIME_ERROR, f"harness error: {exc}",
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
        reward, delta, new_strategy = 0.0, {}, None
        if status is not None:  # skipped steps teach nothing
            delta = update(
                self.htg, history=history, state=state, direction=selection.direction,
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
        lambda cd: cd.decision is not None and cd.decision.action == "veto",
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
    if outcome.decision is not None and outcome.decision.action == "veto":
        return "vetoed", None, outcome.decision.reason or "vetoed"
    if outcome.code is None:  # the proposer produced no candidate (and may have said why)
        return proposal_status(outcome.outcome), None, None
    return None, None, None

