"""What the screen shows, folded from the engine's event stream.

`ViewState.apply(event)` is the one place that turns an engine event into screen
facts; it returns the names of the panes it changed, so the app repaints only those
once per refresh tick. Every fact comes from an event (the engine's pending decisions,
its best candidate, its usage, its plan): nothing is worked out here that the engine
knows. No textual import here: it is plain data, testable alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from htam_engine.evaluate.result import CompilerMessage, EvalResult
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionRequest
from htam_engine.memory.types import Retrieval, Selection

PANES = ("source", "direction", "strategies", "errors", "timings", "status", "decision")
PATH_LENGTH = 8  # directions shown in the recent path


@dataclass(slots=True)
class ErrorLine:
    """A line for the errors pane; `line` set when selecting it can move the source view."""

    text: str
    severity: str = "error"
    line: int | None = None
    file: str | None = None


@dataclass(slots=True)
class ViewState:
    problem: str = ""
    backend: str = ""
    device: str = ""
    policy: str = ""
    proposer: str = ""
    engine_state: str = "starting"
    step: int = 0
    steps_planned: int = 0
    best_speedup: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    # source pane
    code: str = ""  # current candidate (or the streaming text while the model writes)
    previous_best: str | None = None
    best_code: str | None = None
    streaming: bool = False
    stream_sample: int | None = None  # the sample whose text the source pane shows this step
    # direction / strategies panes
    selection: Selection | None = None
    retrieval: Retrieval | None = None
    path: list[str] = field(default_factory=list)
    # errors pane
    errors: list[ErrorLine] = field(default_factory=list)
    # timings pane
    stage: str = ""
    stage_started: float | None = None  # wall clock when the running stage began
    trial_timings: list[float] = field(default_factory=list)
    last_result: EvalResult | None = None  # the latest evaluation (its times in ms and stage seconds)
    step_speedups: list[float | None] = field(default_factory=list)
    compile_baseline: float | None = None  # torch.compile's speed relative to eager
    # steering: the engine's open decision requests, as its latest event listed them
    pending: tuple[DecisionRequest, ...] = ()
    finished_reason: str = ""
    messages: list[str] = field(default_factory=list)

    def apply(self, event: ev.Event) -> set[str]:
        """Fold one event in; returns the panes to repaint."""
        handler = _HANDLERS.get(type(event))
        return handler(self, event) if handler else set()

    def apply_all(self, events: list[ev.Event]) -> set[str]:
        dirty: set[str] = set()
        for e in events:
            dirty |= self.apply(e)
        return dirty

    def set_best(self, code: str | None) -> bool:
        """The engine's best candidate; a new one makes the old one the previous best (diff view)."""
        if code is None or code == self.best_code:
            return False
        self.previous_best, self.best_code = self.best_code, code
        return True

    @property
    def decision(self) -> DecisionRequest | None:
        """The decision the screen offers next: the oldest open one."""
        return next((r for r in self.pending if r.open), None)

    @property
    def running_stage(self) -> bool:
        """An evaluation stage is under way (its elapsed time ticks on the screen)."""
        return self.stage_started is not None


def _session_started(v: ViewState, e: ev.SessionStarted) -> set[str]:
    v.problem, v.backend, v.device = e.problem_id, e.backend, e.device
    v.policy, v.proposer, v.steps_planned = e.policy, e.proposer, e.steps_planned
    v.apply_all(e.history)  # the steps the session already has, as they ran
    v.step = e.step
    if v.best_code and not v.streaming:
        v.code = v.best_code  # a resumed session opens on its best candidate
    return set(PANES)


def _step_started(v: ViewState, e: ev.StepStarted) -> set[str]:
    v.step = e.step
    v.stream_sample = None
    v.stage, v.stage_started = "", None
    v.trial_timings = []
    return {"status", "timings"}


def _direction(v: ViewState, e: ev.DirectionSelected) -> set[str]:
    if e.selection is not None:
        v.selection = e.selection
        v.path = (v.path + [e.selection.direction])[-PATH_LENGTH:]
    return {"direction"}


def _retrieved(v: ViewState, e: ev.StrategiesRetrieved) -> set[str]:
    v.retrieval = e.retrieval
    return {"strategies"}


def _tokens(v: ViewState, e: ev.TokensStreamed) -> set[str]:
    if not v.streaming:
        if v.stream_sample is not None and e.sample != v.stream_sample:
            return set()  # one sample's text at a time: the step's others stream unseen
        v.code = ""
        v.streaming = True
        v.stream_sample = e.sample
    elif e.sample != v.stream_sample:
        return set()
    v.code += e.text
    return {"source"}


def _candidate(v: ViewState, e: ev.CandidateProposed) -> set[str]:
    if v.stream_sample is not None and e.sample != v.stream_sample:
        return set()
    v.streaming = False
    if e.code is not None:
        v.code = e.code
    elif e.failure:
        v.errors = [ErrorLine(f"step {e.step}: no candidate: {e.failure}")]
        return {"source", "errors"}
    return {"source"}


def _approval(v: ViewState, e: ev.ApprovalRequested) -> set[str]:
    first = v.decision is None
    v.pending = e.pending
    if first and e.request is not None and not v.streaming:
        v.code = e.request.code  # the source pane shows the candidate being decided
        return {"status", "decision", "source"}
    return {"status", "decision"}


def _decision(v: ViewState, e: ev.DecisionMade) -> set[str]:
    v.pending = e.pending
    d = e.decision
    if d is not None:
        v.messages.append(f"step {e.step}: {d.action.value} by {d.by.value}" + (f" ({d.reason})" if d.reason else ""))
    nxt = v.decision
    if nxt is not None and not v.streaming:
        v.code = nxt.code
        return {"status", "decision", "source"}
    return {"status", "decision"}


def _progress(v: ViewState, e: ev.EvaluationProgress) -> set[str]:
    if e.stage != v.stage or v.stage_started is None:
        v.stage, v.stage_started = str(e.stage), e.stage_started or None
    if e.timings:
        v.trial_timings = list(e.timings)
    return {"timings"}


def _finished_eval(v: ViewState, e: ev.EvaluationFinished) -> set[str]:
    r = e.result
    if r is None:
        return set()
    v.stage, v.stage_started = r.status.value, None
    v.last_result = r
    if r.timings:
        v.trial_timings = list(r.timings)
    if r.ref_runtime_ms and r.compile_ref_runtime_ms:
        # torch.compile's speed in eager units, so it can sit on the same speedup axis
        v.compile_baseline = r.ref_runtime_ms / r.compile_ref_runtime_ms
    v.errors = error_lines(r)
    return {"timings", "errors", "status"}


def _step_finished(v: ViewState, e: ev.StepFinished) -> set[str]:
    v.step = max(v.step, e.step)
    v.best_speedup = e.best_speedup
    v.step_speedups.append(e.step_speedup)
    v.set_best(e.best_code)
    v.tokens = e.usage.prompt_tokens + e.usage.completion_tokens
    v.cost_usd = e.usage.cost_usd
    return {"status", "timings", "source"}


def _engine_state(v: ViewState, e: ev.EngineStateChanged) -> set[str]:
    v.engine_state = str(e.state)
    if e.state == ev.RunState.FINISHED:
        v.finished_reason = e.detail
    return {"status"}


def _plan(v: ViewState, e: ev.PlanChanged) -> set[str]:
    v.steps_planned, v.policy = e.steps_planned, e.policy
    return {"status"}


def _error(v: ViewState, e: ev.EngineError) -> set[str]:
    where = f" [{e.where}]" if e.where else ""
    v.errors.append(ErrorLine(f"engine{where}: {e.message}"))
    return {"errors"}


def _session_finished(v: ViewState, e: ev.SessionFinished) -> set[str]:
    v.engine_state = str(ev.RunState.FINISHED)
    v.finished_reason = e.reason
    v.pending = ()
    return {"status", "decision"}


def _saved(v: ViewState, e: ev.SessionSaved) -> set[str]:
    return set()


_HANDLERS = {
    ev.SessionStarted: _session_started,
    ev.StepStarted: _step_started,
    ev.DirectionSelected: _direction,
    ev.StrategiesRetrieved: _retrieved,
    ev.TokensStreamed: _tokens,
    ev.CandidateProposed: _candidate,
    ev.ApprovalRequested: _approval,
    ev.DecisionMade: _decision,
    ev.EvaluationProgress: _progress,
    ev.EvaluationFinished: _finished_eval,
    ev.StepFinished: _step_finished,
    ev.EngineStateChanged: _engine_state,
    ev.PlanChanged: _plan,
    ev.EngineError: _error,
    ev.SessionFinished: _session_finished,
    ev.SessionSaved: _saved,
}


def error_lines(result: EvalResult) -> list[ErrorLine]:
    """The errors pane's lines for one evaluation: compiler diagnostics (with lines),
    the summary message, the mismatch and integrity findings."""
    out: list[ErrorLine] = []
    d = result.diagnostics
    for m in d.compiler:
        out.append(_compiler_line(m))
    if d.message and not (result.ok and not d.compiler):
        out.append(ErrorLine(f"{result.status.value}: {d.message}"))
    mm = d.mismatch
    if mm is not None:
        where = f" at {mm.where}" if mm.where else ""
        shapes = ""
        if mm.expected_shape != mm.actual_shape:
            shapes = f"; shape {mm.actual_shape} != expected {mm.expected_shape}"
        out.append(
            ErrorLine(
                f"mismatch{' on ' + mm.input_set if mm.input_set else ''}: max abs {mm.max_abs_error:.3g}, "
                f"max rel {mm.max_rel_error:.3g}{where}{shapes}{' - ' + mm.note if mm.note else ''}"
            )
        )
    for f in result.integrity:
        out.append(ErrorLine(f"integrity {f.rule}: {f.message}", severity=f.severity))
    return out


def _compiler_line(m: CompilerMessage) -> ErrorLine:
    loc = ""
    if m.file or m.line:
        loc = f"{m.file or ''}:{m.line or ''}{':' + str(m.column) if m.column else ''} "
    return ErrorLine(f"{loc}{m.severity}: {m.message}", severity=m.severity, line=m.line, file=m.file)
