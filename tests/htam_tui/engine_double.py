"""ScriptedEngine: a test double of htam_engine.loop.Engine for screen tests.

It speaks the real engine's surface (events() over the real EventBus, decisions
through the real DecisionRequest handles, the same commands) but its steps are scripted:
a fixed selection, retrieval, candidate code and evaluation result per step.

Kept only where the real engine cannot do the thing: snapshot pictures (real timings,
speedups and clocks differ run to run) and a C++ compiler's diagnostic (a load_inline build
costs 20 s+ on the CI's CPU). Every action is tested on the real engine elsewhere
(test_tui_real_engine.py, test_tui_real_steering.py, test_tui_screen.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from htam_engine.evaluate.result import CompilerMessage, Diagnostics, EvalResult, Status
from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionRequest, Pending
from htam_engine.loop.bus import EventBus
from htam_engine.memory.types import (
    DirectionScore, Retrieval, Selection, State, StrategyView, TransitionNote, TransitionTerm,
)
from htam_engine.session.model import Action, Decider, Decision, SessionConfig
from htam_engine.propose.base import Usage

DIRECTIONS = ["memory_access", "vectorization", "fusion", "launch_overhead", "reduction"]

CODE_V1 = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = """
#include <torch/extension.h>
torch::Tensor fused(torch::Tensor x, double scale) {
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        out[i] = in[i] * scale;  // scalar loop
    }
    return y;
}
"""

ext = load_inline("demo", cpp_sources=cpp_src, functions=["fused"])


class ModelNew(nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.fused(x, self.scale)
'''

CODE_V2 = CODE_V1.replace("// scalar loop", "// unrolled by 4").replace('"demo"', '"demo_v2"')


def _selection(step: int) -> Selection:
    chosen = DIRECTIONS[(step - 1) % len(DIRECTIONS)]
    scores = []
    for i, d in enumerate(DIRECTIONS):
        total = 1.0 - 0.1 * ((DIRECTIONS.index(d) - DIRECTIONS.index(chosen)) % len(DIRECTIONS))
        terms = [TransitionTerm(k, DIRECTIONS[(step - 1 - k) % len(DIRECTIONS)], 0.8 ** k, 0.9, 0.3, 0.2 * 0.8 ** k)
                 for k in (1, 2) if step > k]
        scores.append(DirectionScore(d, total, 0.4, 0.5, 0.1, terms))
    scores.sort(key=lambda s: -s.total)
    return Selection(chosen, scores, "argmax", reason=f"{chosen} has the best transition value")


def _retrieval(direction: str) -> Retrieval:
    return Retrieval(
        direction,
        [
            StrategyView(f"{direction}.1", direction, f"{direction}: float4 loads", "vectorize loads", tries=3, successes=2, mean_gain=0.31, fit=0.9),
            StrategyView(f"{direction}.2", direction, f"{direction}: grid-stride loop", "one launch", tries=1, successes=0, mean_gain=-0.05, fit=0.6),
        ],
        [TransitionNote("fusion", direction, when="after fusing", why="bandwidth bound", risk="alignment")],
    )


def ok_result(speedup: float) -> EvalResult:
    return EvalResult(Status.OK, correct=True, runtime_ms=1.0 / speedup, ref_runtime_ms=1.0,
                      compile_ref_runtime_ms=0.8, speedup_eager=speedup, speedup_compile=0.8 * speedup,
                      timings=[1.0 / speedup] * 5, backend="cpp")


def compile_error() -> EvalResult:
    return EvalResult(Status.COMPILE_ERROR, diagnostics=Diagnostics(
        compiler=[CompilerMessage("expected ';' before '}' token", "main.cpp", 7, 30)],
        message="compilation failed"), backend="cpp")


@dataclass
class StepScript:
    code: str
    result: EvalResult
    tokens: list[str] = field(default_factory=list)


DEFAULT_SCRIPT = [StepScript(CODE_V1, ok_result(1.25), ["```python\n", "import torch\n"]),
                  StepScript(CODE_V2, compile_error()), StepScript(CODE_V2, ok_result(1.6))]


class _Problem:
    id = "demo_scale"


class ScriptedEngine:
    def __init__(self, script: list[StepScript] | None = None, *, steps: int = 3, policy: str = "ask",
                 hold: asyncio.Event | None = None):
        self.script = script or DEFAULT_SCRIPT
        self.problem = _Problem()
        self.config = SessionConfig(backend="cpp", device="cpu", policy=policy, steps=steps)
        self.policy = policy
        self.steps_planned = steps
        self.bus = EventBus()
        self.pending = Pending()
        self._running = asyncio.Event()
        self._running.set()
        self.stopped = False
        self.forced: str | None = None
        self.evaluated: list[str] = []
        self.steps_done = 0
        self.hold = hold  # when set, step 1 waits on it (keeps a run "in flight" for a test)
        self.best_code: str | None = None
        self.best_speedup: float | None = None
        self.usage = Usage()

    def events(self):
        return self.bus.subscribe()

    def _emit(self, e: ev.Event) -> None:
        self.bus.publish(e)

    def _state(self, state: ev.RunState) -> None:
        self._emit(ev.EngineStateChanged(self.steps_done + 1, state=state))

    def approve_all(self) -> None:
        self.pending.resolve_all(Decision(Action.APPROVE, Decider.PERSON))
        self.policy = "auto"
        self._emit(ev.PlanChanged(self.steps_done + 1, steps_planned=self.steps_planned, policy=self.policy))

    def pause(self) -> None:
        self._running.clear()
        self._state(ev.RunState.PAUSED)

    def resume(self) -> None:
        self._running.set()
        self._state(ev.RunState.RUNNING)

    def stop(self) -> None:
        self.stopped = True
        self.pending.resolve_all(Decision(Action.SKIP, Decider.STOP))
        self._running.set()
        self._state(ev.RunState.STOPPING)

    def set_budget(self, n: int) -> None:
        self.steps_planned = n
        self._emit(ev.PlanChanged(self.steps_done + 1, steps_planned=n, policy=self.policy))

    def choose_direction(self, name: str) -> None:
        if name not in DIRECTIONS:
            raise ValueError(f"unknown direction {name!r}")
        self.forced = name

    async def reevaluate(self) -> EvalResult:
        self.evaluated.append(self.best_code or "")
        result = ok_result(1.5)
        self._emit(ev.EvaluationFinished(self.steps_done, sample=-1, result=result))
        return result

    async def run(self):
        self.bus.bind_loop()
        self._emit(ev.SessionStarted(0, problem_id=self.problem.id, backend="cpp", device="cpu", policy=self.policy,
                                     proposer="scripted", steps_planned=self.steps_planned))
        self._state(ev.RunState.RUNNING)
        try:
            step = 0
            while not self.stopped and step < self.steps_planned:
                await self._running.wait()
                if self.stopped:
                    break
                step += 1
                await self._step(step)
            reason = "stopped" if self.stopped else "steps"
            self._emit(ev.EngineStateChanged(step, state=ev.RunState.FINISHED, detail=reason))
            self._emit(ev.SessionFinished(step, reason=reason))
        finally:
            self.bus.close()
        return self

    async def _step(self, step: int) -> None:
        script = self.script[(step - 1) % len(self.script)]
        self._emit(ev.StepStarted(step, state=State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", Backend.CPP)))
        selection = _selection(step)
        if self.forced:
            selection = Selection(self.forced, selection.scores, "forced", reason="chosen by a person")
            self.forced = None
        self._emit(ev.DirectionSelected(step, selection=selection))
        self._emit(ev.StrategiesRetrieved(step, retrieval=_retrieval(selection.direction)))
        if self.hold is not None and step == 1:
            await self.hold.wait()
        for t in script.tokens:
            self._emit(ev.TokensStreamed(step, text=t))
            self.usage = self.usage + Usage(0, 1, 0.001)
        self._emit(ev.CandidateProposed(step, code=script.code))
        code = script.code
        if self.policy == "auto":
            decision = Decision(Action.APPROVE, Decider.AUTO)
        else:
            request = DecisionRequest(step, 0, code, best_code=self.best_code, direction=selection.direction,
                                      strategies=[s.title for s in _retrieval(selection.direction).strategies],
                                      why="policy ask")
            self.pending.add(request)
            self._emit(ev.ApprovalRequested(step, request=request, pending=self.pending.open()))
            decision = await request.wait()
            self.pending.remove(request)
        self._emit(ev.DecisionMade(step, decision=decision, pending=self.pending.open()))
        improved = False
        if decision.action in (Action.APPROVE, Action.EDIT):
            code = decision.edited_code or code
            self._emit(ev.EvaluationProgress(step, stage="timing", timings=script.result.timings[:2]))
            self._emit(ev.EvaluationFinished(step, result=script.result))
            if script.result.ok:
                improved = True
                self.best_code = code
        self.steps_done = step
        speedup = script.result.speedup_eager if improved else None
        self.best_speedup = speedup if improved else self.best_speedup
        self._emit(ev.StepFinished(step, status=script.result.status.value, step_speedup=speedup,
                                   best_speedup=self.best_speedup, improved=improved, best_code=self.best_code,
                                   usage=self.usage))
