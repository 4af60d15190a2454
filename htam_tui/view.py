"""What the screen shows, folded from the engine's event stream.

`ViewState.apply(event)` is the one place that turns an engine event into screen
facts; it returns the names of the panes it changed, so the app repaints only those
once per refresh tick. No textual import here: it is plain data, testable alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from htam_engine.evaluate.result import CompilerMessage, EvalResult
from htam_engine.loop import events as ev
from htam_engine.memory.types import Retrieval, Selection

PANES = ("source", "direction", "strategies", "errors", "timings", "status")
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
    trial_timings: list[float] = field(default_factory=list)
    step_speedups: list[float | None] = field(default_factory=list)
    compile_baseline: float | None = None  # torch.compile's speed relative to eager
    step_best: float | None = None  # the best speedup among this step's evaluated samples
    # steering
    pending: dict[str, ev.ApprovalRequested] = field(default_factory=dict)
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

    @property
    def pending_count(self) -> int:
        return len(self.pending)

    def set_best(self, code: str | None) -> bool:
        """A new best candidate; the old one becomes the previous best (for the diff view)."""
        if code is None or code == self.best_code:
            return False
        self.previous_best, self.best_code = self.best_code, code
        return True

    def next_pending(self) -> ev.ApprovalRequested | None:
        return next(iter(self.pending.values()), None)


def _session_started(v: ViewState, e: ev.SessionStarted) -> set[str]:
    v.problem = e.problem_id or v.problem
    v.steps_planned = e.steps_planned or v.steps_planned
    v.engine_state = "running"
    return {"status"}


def _step_started(v: ViewState, e: ev.StepStarted) -> set[str]:
    v.step = e.step
    v.stream_sample = None
    v.stage = ""
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
    v.pending[e.request_id] = e
    return {"status"}


def _decision(v: ViewState, e: ev.DecisionMade) -> set[str]:
    v.pending.pop(e.request_id, None)
    v.messages.append(f"step {e.step}: {e.action} by {e.by}" + (f" ({e.reason})" if e.reason else ""))
    return {"status"}


def _progress(v: ViewState, e: ev.EvaluationProgress) -> set[str]:
    v.stage = e.stage
    if e.timings:
        v.trial_timings = list(e.timings)
    return {"timings"}


def _finished_eval(v: ViewState, e: ev.EvaluationFinished) -> set[str]:
    r = e.result
    if r is None:
        return set()
    if e.sample >= 0 and r.ok and r.speedup_eager is not None:  # sample -1: a re-evaluation, not the step's
        v.step_best = max(v.step_best or 0.0, r.speedup_eager)
    v.stage = r.status.value
    if r.timings:
        v.trial_timings = list(r.timings)
    if r.ref_runtime_ms and r.compile_ref_runtime_ms:
        # torch.compile's speed in eager units, so it can sit on the same speedup axis
        v.compile_baseline = r.ref_runtime_ms / r.compile_ref_runtime_ms
    v.errors = error_lines(r)
    return {"timings", "errors", "status"}


def _step_finished(v: ViewState, e: ev.StepFinished) -> set[str]:
    v.step = max(v.step, e.step)
    if e.best_speedup is not None:
        v.best_speedup = e.best_speedup
    v.step_speedups.append(v.step_best)
    if e.improved and v.code:
        v.set_best(v.code)
    v.step_best = None
    return {"status", "timings", "source"}


def _engine_state(v: ViewState, e: ev.EngineStateChanged) -> set[str]:
    v.engine_state = e.state
    return {"status"}


def _error(v: ViewState, e: ev.EngineError) -> set[str]:
    where = f" [{e.where}]" if e.where else ""
    v.errors.append(ErrorLine(f"engine{where}: {e.message}"))
    return {"errors"}


def _session_finished(v: ViewState, e: ev.SessionFinished) -> set[str]:
    v.engine_state = "finished"
    v.finished_reason = e.reason
    v.pending.clear()
    if e.best is not None and e.best.speedup_eager is not None and e.best.ok:
        v.best_speedup = e.best.speedup_eager
    return {"status"}


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
