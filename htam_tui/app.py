"""The htam app: a front end on the engine's event stream and commands.

One worker (`bridge.pump`) turns engine events into `EngineEvents` messages; this class
folds them into the ViewState and repaints the panes they touched. Every command is a
typed engine method (or a decision request's) called through `command()`, the one place
its failures are reported.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from textual.app import App, ComposeResult, SuspendNotSupported
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Input
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from htam_engine.errors import InputError, UsageError
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionRequest
from htam_tui import bridge, render
from htam_tui.actions import ALL_ACTIONS, MAIN_ACTIONS, KeyBar, bindings
from htam_tui.commands import HtamCommands
from htam_tui.panes import (
    DecisionBar, DirectionPane, ErrorsPane, Pane, SourcePane, StatusLine, StrategiesPane, TimingsPane,
)
from htam_tui.screens.approval import ApprovalScreen, Choice
from htam_tui.screens.help import HelpScreen
from htam_tui.screens.prompts import ChoicePrompt, TextPrompt
from htam_tui.view import PANES, ViewState

TICK_S = 1.0  # how often a running stage's elapsed time is redrawn
QUIT_GRACE_S = 5.0


@dataclass(slots=True)
class UiSettings:
    """Config `[ui]`: refresh_hz (lower it on a slow link), bell on pending decisions,
    auto_open_approval (open the full decision screen as soon as a decision is requested;
    otherwise the decision bar under the panes offers it and `o` opens it), theme (a Textual
    theme name, e.g. "ansi-dark" to use the terminal's own colours)."""

    refresh_hz: float = bridge.DEFAULT_REFRESH_HZ
    bell: bool = True
    auto_open_approval: bool = False
    theme: str | None = None

    @classmethod
    def from_config(cls, ui: dict[str, Any] | None) -> "UiSettings":
        """Settings from config `[ui]`; a bad value is an InputError naming the setting (exit 2)."""

        def flag(name: str, value: Any) -> bool:
            if not isinstance(value, bool):
                raise ValueError(f"{value!r} is not true or false")
            return value

        convert = {"refresh_hz": lambda n, v: max(0.5, float(v)), "bell": flag, "auto_open_approval": flag,
                   "theme": lambda n, v: str(v)}
        s = cls()
        for name, value in dict(ui or {}).items():
            if name not in convert:
                continue  # settings other parts of htam read
            try:
                setattr(s, name, convert[name](name, value))
            except (TypeError, ValueError) as exc:
                raise InputError(f"config [ui] {name}: {exc}") from None
        return s


def parse_budget(text: str) -> int:
    """The step budget a person typed; UsageError (shown, not raised) for anything but a whole number."""
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"the step budget is a whole number of steps, not {text.strip()!r}") from None


class HtamApp(App[int]):
    TITLE = "htam"
    CSS_PATH = "app.tcss"
    BINDINGS = bindings(MAIN_ACTIONS)
    COMMANDS = App.COMMANDS | {HtamCommands}
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        engine: "bridge.EngineLike | None" = None,
        *,
        htg: Any | None = None,
        sessions_dir: Path | None = None,
        settings: UiSettings | None = None,
        keymap: dict[str, str] | None = None,
        engine_factory: Callable[[Path], Any] | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.htg = htg
        self.sessions_dir = sessions_dir
        self.settings = settings or UiSettings()
        self.keymap = dict(keymap or {})
        self.engine_factory = engine_factory  # session path -> engine resuming it
        self.view = ViewState()
        self.session: Any = None  # what engine.run() returned
        self.engine_worker: Worker | None = None
        self._quitting = False  # quit: the run's workers are killed, not waited for
        self.source_width = 60  # percent of the body
        self.bottom_height = 7

    # ---- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="body"):
            yield SourcePane(id="source-pane")
            with Vertical(id="side"):
                yield DirectionPane(id="direction-pane")
                yield StrategiesPane(id="strategies-pane")
        with Horizontal(id="bottom"):
            yield ErrorsPane(id="errors-pane")
            yield TimingsPane(id="timings-pane")
        yield DecisionBar(id="decision")
        yield KeyBar(MAIN_ACTIONS, classes="keybar")

    def get_system_commands(self, screen):
        # The palette lists htam's own quit (with its key); Textual's would make a second "Quit".
        for command in super().get_system_commands(screen):
            if command.title != "Quit":
                yield command

    def on_mount(self) -> None:
        Input.cursor_blink = False  # no repaint twice a second over a slow link (and stable screenshots)
        if self.engine is not None:
            self.attach(self.engine)
        if self.settings.theme:
            if self.settings.theme in self.available_themes:
                self.theme = self.settings.theme
            else:
                self.report(f"config [ui] theme: unknown theme {self.settings.theme!r}")
        if self.keymap:
            unknown = sorted(set(self.keymap) - {spec.id for spec in ALL_ACTIONS})
            if unknown:
                self.report(f"config [keys]: unknown binding id(s) {', '.join(unknown)} (see ? for the ids)")
            self.set_keymap(self.keymap)
        self.repaint(set(PANES))
        self.query_one("#source").focus()
        self.set_interval(TICK_S, self._tick)

    def _tick(self) -> None:
        """A running stage's elapsed time moves on between events."""
        if self.view.running_stage:
            self.repaint({"timings"})

    def attach(self, engine: Any) -> None:
        """Watch and steer `engine`: subscribe to its events, then start its run. Everything
        shown comes from its events, starting with SessionStarted (facts and history)."""
        self.engine = engine
        self.view = ViewState()
        self.htg = getattr(engine, "htg", None) or self.htg
        if self.htg is None:
            self.htg = getattr(engine, "htg", None)
        stream = engine.events()  # subscribe before run() so the first events are seen
        self.run_worker(bridge.pump(stream, self, self.settings.refresh_hz), group="events", exclusive=True, exit_on_error=False)
        self.engine_worker = self.run_worker(self._run_engine(engine), group="engine", exclusive=True,
                                             exit_on_error=False)

    async def _run_engine(self, engine: Any) -> None:
        try:
            self.session = await engine.run()
        finally:
            if hasattr(engine, "aclose"):  # the engine's worker pool dies with its run
                await engine.aclose(now=self._quitting)

    # ---- engine -> screen ---------------------------------------------------------------
    def on_engine_events(self, message: bridge.EngineEvents) -> None:
        dirty = self.view.apply_all(message.events)
        if any(isinstance(e, ev.ApprovalRequested) for e in message.events):
            if self.settings.bell:
                self.bell()
            if self.settings.auto_open_approval:
                self.call_later(self.open_approval)
        self.repaint(dirty)

    def on_engine_ended(self, message: bridge.EngineEnded) -> None:
        if message.error is not None:
            self.report(f"event stream failed: {message.error}")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.report(f"{event.worker.group or 'worker'}: {event.worker.error}")

    def report(self, text: str) -> None:
        """The one place a failure reaches the person."""
        self.view.messages.append(text)
        self.notify(text, severity="error", timeout=8)

    def repaint(self, dirty: set[str]) -> None:
        panes = {
            "status": "#status", "source": "#source-pane", "direction": "#direction-pane",
            "strategies": "#strategies-pane", "errors": "#errors-pane", "timings": "#timings-pane",
            "decision": "#decision",
        }
        if not self.screen_stack:
            return
        main = self.screen_stack[0]  # the panes live on the first screen, under any browser or prompt
        for name in dirty:
            if name in panes:
                try:
                    widget = main.query_one(panes[name])
                except NoMatches:  # the app is shutting down
                    return
                widget.show(self.view)

    # ---- commands -----------------------------------------------------------------------
    async def command(self, method: Callable[..., Any], *args: Any) -> bool:
        """Call a typed engine (or decision request) method; a refusal or fault is reported.
        True when it was done (results come back as events)."""
        try:
            result = method(*args)
            if asyncio.iscoroutine(result):
                await result
            return True
        except Exception as exc:  # noqa: BLE001 - reported, the app goes on
            self.report(str(exc) or type(exc).__name__)
            return False

    def _engine_or_report(self) -> Any:
        if self.engine is None:
            self.report("no engine is running")
        return self.engine

    def open_approval(self) -> None:
        """The full decision screen for the oldest open decision."""
        if isinstance(self.screen, ApprovalScreen):
            return
        request = self.view.decision
        if request is None:
            return
        if len(self.screen_stack) > 1:  # a browser or prompt is open: the bar waits for the person
            return

        async def done(choice: Choice | None) -> None:
            if choice is not None:
                await self.apply_choice(request, choice)
                if self.settings.auto_open_approval:
                    self.call_later(self.open_approval)

        self.push_screen(ApprovalScreen(request, len(self.view.pending)), done)

    async def apply_choice(self, request: DecisionRequest, choice: Choice) -> None:
        """Carry out what the person chose for `request` (on the decision screen or the bar)."""
        if choice.action == "approve_all":
            engine = self._engine_or_report()
            if engine is not None:
                await self.command(engine.approve_all)
        elif choice.action == "edit":
            edited = self.edit_in_editor(request.code)
            if edited is None or edited == request.code:
                self.notify("no change made in the editor: approving as it is")
                await self.command(request.approve)
            else:
                await self.command(request.edit, edited)
                if self.view.step == request.step:  # the source pane shows what is evaluated now
                    self.view.code = edited
                    self.repaint({"source"})
        elif choice.action == "veto":
            await self.command(request.veto, choice.reason)
        elif choice.action == "skip":
            await self.command(request.skip)
        else:
            await self.command(request.approve)

    def edit_in_editor(self, code: str) -> str | None:
        """Open the code in $VISUAL/$EDITOR with the app suspended; the edited text, or None."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="htam-candidate-", delete=False) as f:
            f.write(code)
            path = f.name
        try:
            try:
                with self.suspend():
                    rc = subprocess.call([*shlex.split(editor), path])
            except SuspendNotSupported:  # headless (tests): the editor runs without a terminal
                rc = subprocess.call([*shlex.split(editor), path], stdin=subprocess.DEVNULL)
            if rc != 0:
                self.report(f"editor '{editor}' exited with status {rc}")
                return None
            return Path(path).read_text()
        except OSError as exc:
            self.report(f"cannot run editor '{editor}': {exc}")
            return None
        finally:
            Path(path).unlink(missing_ok=True)

    # ---- actions ------------------------------------------------------------------------
    # Actions that work on the main screen's panes: off while a browser or prompt is on top
    # (the command palette would otherwise offer them there).
    PANE_ACTIONS = frozenset({"toggle_diff", "toggle_kernel", "zoom", "resize", "resize_bottom", "focus_pane",
                              "decide", "approve_all", "open_approval"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.PANE_ACTIONS and len(self.screen_stack) > 1:
            return False
        return True

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        """Stop the run and leave. A step that ends within QUIT_GRACE_S is saved (a pending
        candidate becomes a skip by stop); a longer one (a compile, say) is dropped, and
        resuming redoes it."""
        worker = self.engine_worker
        self._quitting = True
        if self.engine is not None and worker is not None and not worker.is_finished:
            await self.command(self.engine.stop)
            try:
                await asyncio.wait_for(worker.wait(), QUIT_GRACE_S)
            except (asyncio.TimeoutError, WorkerFailed, WorkerCancelled):
                pass
        self.exit(0)

    async def action_toggle_pause(self) -> None:
        engine = self._engine_or_report()
        if engine is None:
            return
        if self.view.engine_state in (ev.RunState.PAUSED, ev.RunState.PAUSING):
            await self.command(engine.resume)
        else:
            await self.command(engine.pause)

    async def action_stop(self) -> None:
        engine = self._engine_or_report()
        if engine is not None:
            await self.command(engine.stop)

    def action_set_steps(self) -> None:
        engine = self._engine_or_report()
        if engine is None:
            return

        async def done(answer: str | None) -> None:
            if answer is None or not answer.strip():
                return
            try:
                steps = parse_budget(answer)
            except UsageError as exc:
                self.report(str(exc))
                return
            await self.command(engine.set_budget, steps)

        self.push_screen(TextPrompt("Step budget (steps in the session):", placeholder=f"now {self.view.steps_planned}",
                                    integer=True), done)

    def directions(self) -> list[str]:
        if self.htg is not None:
            try:
                return list(self.htg.directions())
            except Exception as exc:  # noqa: BLE001
                self.report(f"memory: {exc}")
        if self.view.selection is not None:
            return [s.direction for s in self.view.selection.scores]
        return []

    def action_pick_direction(self) -> None:
        names = self.directions()
        if not names:
            self.report("no directions known yet")
            return

        engine = self._engine_or_report()
        if engine is None:
            return

        async def done(name: str | None) -> None:
            if name and await self.command(engine.choose_direction, name):
                self.notify(f"next step goes in direction {name}")

        current = self.view.selection.direction if self.view.selection else None
        self.push_screen(ChoicePrompt("Direction for the next step:", names, current), done)

    async def action_reevaluate(self) -> None:
        engine = self._engine_or_report()
        if engine is not None and self.view.best_code:
            self.notify("re-evaluating the current best")
        if engine is not None:
            await self.command(engine.reevaluate)  # its result arrives as an event

    def _decision_or_say(self) -> DecisionRequest | None:
        request = self.view.decision
        if request is None:
            self.notify("no decision pending")
        return request

    def action_open_approval(self) -> None:
        if self._decision_or_say() is not None:
            self.open_approval()

    async def action_decide(self, action: str) -> None:
        """approve / veto / edit / skip the oldest open decision from the main screen."""
        request = self._decision_or_say()
        if request is None:
            return
        if action == "veto":
            async def done(reason: str | None) -> None:
                if reason is not None:
                    await self.apply_choice(request, Choice("veto", reason.strip()))

            self.push_screen(TextPrompt("Veto: why? (goes into memory and the next prompt)", placeholder="reason"), done)
            return
        await self.apply_choice(request, Choice(action))

    async def action_approve_all(self) -> None:
        engine = self._engine_or_report()
        if engine is not None:
            await self.command(engine.approve_all)

    def action_sessions(self) -> None:
        from htam_tui.screens.sessions import SessionsScreen

        self.push_screen(SessionsScreen(self.sessions_dir))

    async def resume_session(self, path: Path) -> None:
        """Leave the current run (stopping it) and watch a resumed session instead."""
        if self.engine_factory is None:
            self.report("resuming needs the app started by `htam` (no engine factory)")
            return
        try:
            engine = self.engine_factory(Path(path))
        except Exception as exc:  # noqa: BLE001
            self.report(f"cannot resume {path}: {exc}")
            return
        if self.engine is not None and self.engine_worker is not None and not self.engine_worker.is_finished:
            await self.command(self.engine.stop)
        self.session = None
        self.attach(engine)
        self.repaint({"source", "direction", "strategies", "errors", "timings", "status"})
        self.notify(f"resumed {Path(path).name}")

    def action_memory(self) -> None:
        from htam_tui.screens.memory import MemoryScreen

        self.push_screen(MemoryScreen(self.htg))

    def _source(self) -> SourcePane:
        return self.query_one(SourcePane)

    def action_toggle_diff(self) -> None:
        pane = self._source()
        pane.show_diff = not pane.show_diff
        pane.show(self.view)

    def action_toggle_kernel(self) -> None:
        pane = self._source()
        pane.mode = "kernel" if pane.mode == "module" else "module"
        pane.show_diff = False
        pane.show(self.view)

    def on_errors_pane_jump(self, message: ErrorsPane.Jump) -> None:
        pane = self._source()
        pane.goto(*render.locate(self.view.code, message.file, message.line))
        pane.show(self.view)

    def action_zoom(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.focused is not None:
            pane = next((w for w in self.focused.ancestors_with_self if isinstance(w, Pane)), None)
            if pane is not None:
                self.screen.maximize(pane, container=False)

    def action_focus_pane(self, name: str) -> None:
        target = {
            "source": "#source", "direction": "#direction-scroll", "strategies": "#strategies-scroll",
            "errors": "#errors", "timings": "#timings-scroll",
        }[name]
        if self.screen.maximized is not None:
            self.screen.minimize()
        self.query_one(target).focus()

    def action_resize(self, delta: int) -> None:
        self.source_width = max(30, min(85, self.source_width + 5 * delta))
        self.query_one("#source-pane").styles.width = f"{self.source_width}%"
        self.query_one("#side").styles.width = f"{100 - self.source_width}%"

    def action_resize_bottom(self, delta: int) -> None:
        self.bottom_height = max(4, min(self.size.height - 6, self.bottom_height + 2 * delta))
        self.query_one("#bottom").styles.height = self.bottom_height
