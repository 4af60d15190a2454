"""The decision screen (opened with `o`): the candidate (or its diff against the engine's
best), the direction and strategies that produced it, its result when it was evaluated
first, and the keys that decide. The app carries the returned choice out on the request."""

from __future__ import annotations

from dataclasses import dataclass

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static, TextArea

from htam_engine.evaluate.result import EvalResult
from htam_engine.loop.approval import DecisionRequest
from htam_tui import render
from htam_tui.actions import APPROVAL_ACTIONS, KeyBar, bindings
from htam_tui.screens.prompts import TextPrompt


@dataclass(slots=True)
class Choice:
    action: str  # approve | veto | edit | skip | approve_all
    reason: str = ""


def result_line(result: EvalResult | None) -> Text:
    if result is None:
        return Text("not evaluated yet: the policy asks before evaluating", style="dim")
    t = Text()
    t.append(f"measured: {result.status.value}", style="bold green" if result.ok else "bold red")
    if result.ok:
        t.append(f"  {render.fmt_speedup(result.speedup_eager)} vs eager, {render.fmt_speedup(result.speedup_compile)} vs torch.compile")
        if result.runtime_ms is not None:
            t.append(f"  ({result.runtime_ms:.4g} ms)")
    elif result.diagnostics.message:
        t.append(f"  {result.diagnostics.message}")
    return t


class ApprovalScreen(Screen[Choice | None]):
    BINDINGS = bindings(APPROVAL_ACTIONS)

    def __init__(self, request: DecisionRequest, pending: int) -> None:
        super().__init__()
        self.request = request
        self.pending = pending
        self.show_diff = False

    def compose(self) -> ComposeResult:
        r = self.request
        yield Static(render.decision_view(r, self.pending).split("\n")[0], id="approval-head")
        yield Static(result_line(r.result), id="approval-result")
        area = TextArea(r.code, language="python", read_only=True, show_line_numbers=True, id="approval-code")
        area.cursor_blink = False
        yield area
        with VerticalScroll(id="approval-diff"):
            yield Static(Syntax(render.unified_diff(r.best_code, r.code), "diff", theme="ansi_dark"))
        yield KeyBar(APPROVAL_ACTIONS, classes="keybar")

    def on_mount(self) -> None:
        self.query_one("#approval-diff").display = False
        self.query_one("#approval-code").focus()

    def action_approve(self) -> None:
        self.dismiss(Choice("approve"))

    def action_skip(self) -> None:
        self.dismiss(Choice("skip"))

    def action_edit(self) -> None:
        self.dismiss(Choice("edit"))

    def action_approve_all(self) -> None:
        self.dismiss(Choice("approve_all"))

    def action_later(self) -> None:
        self.dismiss(None)

    def action_veto(self) -> None:
        def done(reason: str | None) -> None:
            if reason is not None:
                self.dismiss(Choice("veto", reason.strip()))

        self.app.push_screen(TextPrompt("Veto: why? (goes into memory and the next prompt)", placeholder="reason"), done)

    def action_toggle_diff(self) -> None:
        self.show_diff = not self.show_diff
        self.query_one("#approval-diff").display = self.show_diff
        self.query_one("#approval-code").display = not self.show_diff
