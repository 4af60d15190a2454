"""Headless progress: engine events as lines on standard error, and a terminal approval prompt.

On a terminal the lines are styled with rich and a live status line shows the step,
the streamed text and the elapsed time; otherwise they are plain text (logs, CI).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from typing import Any, TextIO

from htam_engine.evaluate.result import EvalResult
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionClosed, DecisionRequest
from htam_engine.loop.events import RunState
from htam_engine.session.model import Action, Decider


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fmt_speedup(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def describe_result(result: EvalResult | None) -> str:
    """One line about an evaluation result."""
    if result is None:
        return "not evaluated"
    if result.ok:
        rt = "-" if result.runtime_ms is None else f"{result.runtime_ms:.3f} ms"
        return (f"ok  {fmt_speedup(result.speedup_eager)} vs eager, "
                f"{fmt_speedup(result.speedup_compile)} vs torch.compile ({rt})")
    msg = result.diagnostics.message or (result.integrity[0].message if result.integrity else "")
    return f"{result.status.value}: {msg}".strip().rstrip(":")[:300]


def event_line(event: ev.Event, planned: int) -> str | None:
    """The text for one event, or None for events that do not get a line of their own."""
    s = event.step
    if isinstance(event, ev.SessionStarted):
        return f"session {event.session_path or '(not saved)'}: {event.problem_id}, {event.steps_planned} steps planned"
    if isinstance(event, ev.StepStarted):
        st = event.state
        where = f" ({st.status}, {st.family.value}, {st.bottleneck.value}-bound)" if st else ""
        return f"step {s}/{planned}{where}"
    if isinstance(event, ev.DirectionSelected) and event.selection is not None:
        sel = event.selection
        return f"  direction {sel.direction or '-'} [{sel.mode}]" + (f": {sel.reason}" if sel.reason else "")
    if isinstance(event, ev.StrategiesRetrieved) and event.retrieval is not None:
        titles = ", ".join(x.title for x in event.retrieval.strategies[:3])
        return f"  strategies: {titles}" if titles else None
    if isinstance(event, ev.CandidateProposed):
        if event.code is None:
            return f"  sample {event.sample}: no candidate ({event.failure})"
        return f"  sample {event.sample}: candidate proposed ({len(event.code.splitlines())} lines)"
    if isinstance(event, ev.DecisionMade) and event.decision is not None:
        d = event.decision
        if d.action is Action.APPROVE and d.by not in (Decider.PERSON, Decider.STOP):
            return None  # routine: the policy approved
        why = f": {d.reason}" if d.reason else ""
        return f"  sample {event.sample}: {d.action.value} by {d.by.value}{why}"
    if isinstance(event, ev.EvaluationFinished) and event.sample >= 0:
        return f"  sample {event.sample}: {describe_result(event.result)}"
    if isinstance(event, ev.MemoryUpdated):
        return f"  memory: {event.direction or '-'} reward {event.reward:+.3f}"
    if isinstance(event, ev.StepFinished):
        mark = " (new best)" if event.improved else ""
        return f"  step {s} done ({event.status}): best {fmt_speedup(event.best_speedup)}{mark}"
    if isinstance(event, ev.PlanChanged):
        return f"  plan: {event.steps_planned} steps, policy {event.policy}"
    if isinstance(event, ev.EngineError):
        return f"  error ({event.where}): {event.message}"
    if isinstance(event, ev.EngineStateChanged) and event.state in (RunState.PAUSED, RunState.STOPPING):
        return f"engine {event.state.value}" + (f": {event.detail}" if event.detail else "")
    if isinstance(event, ev.SessionFinished):
        return f"finished ({event.reason}): best {describe_result(event.best) if event.best else 'none'}"
    return None


class LineReporter:
    """Plain lines, one per notable event."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr

    def start(self) -> None:
        pass

    def handle(self, event: ev.Event, planned: int) -> None:
        line = event_line(event, planned)
        if line is not None:
            print(line, file=self.stream, flush=True)

    def stop(self) -> None:
        pass


class RichReporter:
    """Styled lines plus a live status line (step, streamed characters, elapsed time)."""

    _STYLE = {"error": "red", "step_started": "bold", "session_finished": "bold green",
              "step_finished": "cyan", "direction_selected": "magenta"}

    def __init__(self, stream: TextIO | None = None):
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = Console(file=stream or sys.stderr, highlight=False)
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=self.console, transient=True)
        self.task = self.progress.add_task("starting", total=None)
        self.streamed = 0

    def start(self) -> None:
        self.progress.start()

    def handle(self, event: ev.Event, planned: int) -> None:
        if isinstance(event, ev.TokensStreamed):
            self.streamed += len(event.text)
        elif isinstance(event, ev.StepStarted):
            self.streamed = 0
        if isinstance(event, ev.EvaluationProgress):
            self.progress.update(self.task, description=f"step {event.step}/{planned}: sample {event.sample} {event.stage}")
        elif event.step:
            self.progress.update(self.task, description=f"step {event.step}/{planned}: {event.kind.replace('_', ' ')}"
                                 + (f", {self.streamed} chars streamed" if self.streamed else ""))
        line = event_line(event, planned)
        if line is not None:
            from rich.text import Text

            self.console.print(Text(line, style=self._STYLE.get(event.kind, "")))

    def stop(self) -> None:
        self.progress.stop()


def make_reporter(stream: TextIO | None = None) -> LineReporter | RichReporter:
    stream = stream or sys.stderr
    return RichReporter(stream) if stream.isatty() else LineReporter(stream)


class TerminalPrompter:
    """Asks the person at the terminal for each pending decision, one at a time."""

    KEYS = "[a]pprove  [v]eto  [e]dit  [s]kip  approve [A]ll"

    def __init__(self, engine: Any, out: TextIO | None = None):
        self.engine = engine
        self.out = out or sys.stderr

    async def ask(self, request: DecisionRequest) -> None:
        lines = request.code.splitlines()
        shown = "\n".join(lines[:60]) + (f"\n... ({len(lines) - 60} more lines)" if len(lines) > 60 else "")
        print(f"\n--- step {request.step}, sample {request.sample}: candidate ({request.direction or 'no direction'}"
              f"{'; ' + request.why if request.why else ''}) ---\n{shown}\n---", file=self.out, flush=True)
        while request.open:
            answer = (await asyncio.to_thread(_read, f"{self.KEYS}: ")).strip()
            try:
                if await self._answer(answer, request):
                    return
            except DecisionClosed as exc:  # stop() settled it while the person was typing
                print(f"  ({exc})", file=self.out)
                return

    async def _answer(self, answer: str, request: DecisionRequest) -> bool:
        """Carry out one typed answer; False when it was not one (ask again)."""
        if answer == "A":
            self.engine.approve_all()
        elif answer in ("a", "approve"):
            request.approve()
        elif answer in ("s", "skip"):
            request.skip()
        elif answer in ("v", "veto"):
            request.veto((await asyncio.to_thread(_read, "reason (optional): ")).strip())
        elif answer in ("e", "edit"):
            edited = await asyncio.to_thread(edit_in_editor, request.code)
            if not edited.strip():
                return False
            request.edit(edited)
        else:
            return False
        return True


def _read(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return "s"


def edit_in_editor(code: str) -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(code)
        path = fh.name
    try:
        subprocess.run([*editor.split(), path], check=False)
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    finally:
        os.unlink(path)


async def follow(engine: Any, subscription: Any, reporter: Any, prompter: TerminalPrompter | None = None) -> None:
    """Consume the event stream until it ends: report each event, ask for approvals."""
    reporter.start()
    try:
        async for event in subscription:
            reporter.handle(event, engine.steps_planned)
            if prompter is not None and isinstance(event, ev.ApprovalRequested) and event.request is not None \
                    and event.request.open:
                reporter.stop()
                await prompter.ask(event.request)
                reporter.start()
    finally:
        reporter.stop()
