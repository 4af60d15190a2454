"""The main screen's panes. Each repaints itself from the ViewState when told to."""

from __future__ import annotations

import time

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from htam_tui import render
from htam_tui.highlight import CPP, register_cpp
from htam_tui.view import ViewState


class Pane(Vertical):
    """A bordered pane; zooming the focused widget maximizes its pane."""

    ALLOW_MAXIMIZE = True

    def __init__(self, title: str, key: str, **kw) -> None:
        super().__init__(**kw)
        self.border_title = f"{key} {title}"


def _set_display(widget, on: bool) -> None:
    if widget.display != on:  # setting it at all schedules a layout pass
        widget.display = on


class StatusLine(Static):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._plain = None
        self._view: ViewState | None = None  # kept to redraw at a new width

    def show(self, view: ViewState) -> None:
        self._view = view
        line = render.status_line(view, self.size.width or None)
        if line.plain != self._plain:  # most events leave the status as it was
            self._plain = line.plain
            self.update(line)

    def on_resize(self) -> None:
        if self._view is not None:
            self.show(self._view)


class DecisionBar(Static):
    """Two lines under the panes while a decision waits: the candidate's step, direction and
    strategy, and the keys that decide it (the panes stay in view)."""

    def show(self, view: ViewState) -> None:
        request = view.decision
        _set_display(self, request is not None)
        if request is not None:
            self.update(render.decision_view(request, len(view.pending)))


class SourcePane(Pane):
    """Candidate source: module (Python) or kernel-only (C++), or a diff against the previous best."""

    def __init__(self, **kw) -> None:
        super().__init__("Source", "1", **kw)
        self.mode = "module"  # module | kernel
        self.show_diff = False
        self._shown = ""

    def compose(self) -> ComposeResult:
        area = TextArea("", read_only=True, show_line_numbers=True, id="source", soft_wrap=False)
        area.cursor_blink = False
        register_cpp(area)
        yield area
        with VerticalScroll(id="diff-box"):
            yield Static(id="diff")

    @property
    def area(self) -> TextArea:
        return self.query_one("#source", TextArea)

    def show(self, view: ViewState) -> None:
        area = self.area
        box = self.query_one("#diff-box")
        if self.show_diff and not view.streaming:
            diff = render.unified_diff(view.best_code if view.best_code != view.code else view.previous_best,
                                       view.code)
            self.query_one("#diff", Static).update(Syntax(diff, "diff", theme="ansi_dark", word_wrap=False))
            _set_display(area, False)
            _set_display(box, True)
            self.border_subtitle = "diff vs previous best"
            return
        _set_display(area, True)
        _set_display(box, False)
        text, language = view.code, "python"  # model text streams in as Python too: no re-highlighting setup
        if view.streaming:
            self.border_subtitle = "model writing…"
        elif self.mode == "kernel":
            parts = render.kernel_sources(view.code)
            if parts:
                text, language = "\n".join(p for _, p in parts), CPP
            self.border_subtitle = "kernel (C++)" if parts else "no C++ source in this module"
        else:
            self.border_subtitle = "module"
        if language not in area.available_languages:
            language = None
        if area.language != language:
            area.language = language  # prepares the highlight query: only when the language changes
        if text == self._shown:
            return
        if view.streaming and text.startswith(self._shown):
            area.insert(text[len(self._shown):], area.document.end)  # grow in place
            area.scroll_end(animate=False)
        else:
            # an edit, not load_text: keeps the prepared query and reparses incrementally
            area.replace(text, (0, 0), area.document.end)
            area.move_cursor((0, 0))
            area.scroll_home(animate=False)
        self._shown = text

    def goto(self, mode: str, line: int) -> None:
        """Show `mode` (module | kernel) with the cursor on `line` (from 1)."""
        self.show_diff = False
        self.mode = mode
        self.app.call_later(self._goto, line)  # after the pane has repainted in that mode

    def _goto(self, line: int) -> None:
        area = self.area
        row = max(0, min(line - 1, area.document.line_count - 1))
        area.move_cursor((row, 0), center=True)
        area.focus()


class DirectionPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Direction", "2", **kw)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="direction-scroll"):
            yield Static(Text("no direction selected yet", style="dim"), id="direction")

    def show(self, view: ViewState) -> None:
        self.query_one("#direction", Static).update(render.direction_view(view.selection, view.path))


class StrategiesPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Strategies", "3", **kw)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="strategies-scroll"):
            yield Static(Text("no strategies retrieved yet", style="dim"), id="strategies")

    def show(self, view: ViewState) -> None:
        self.query_one("#strategies", Static).update(render.strategies_view(view.retrieval))


class ErrorsPane(Pane):
    class Jump(Message):
        def __init__(self, line: int, file: str | None) -> None:
            super().__init__()
            self.line = line
            self.file = file

    def __init__(self, **kw) -> None:
        super().__init__("Errors", "4", **kw)
        self._lines: list = []

    def compose(self) -> ComposeResult:
        yield OptionList(id="errors")

    def show(self, view: ViewState) -> None:
        errors = self.query_one("#errors", OptionList)
        errors.clear_options()
        self._lines = list(view.errors)
        style = {"error": "red", "warning": "yellow", "reject": "bold red", "incorrect": "red", "warn": "yellow"}
        errors.add_options(
            [Option(Text(p.text, style=style.get(p.severity, "")), id=str(i)) for i, p in enumerate(self._lines)]
        )
        if self._lines:
            errors.highlighted = 0
        self.border_subtitle = f"{len(self._lines)}" if self._lines else ""

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        problem = self._lines[int(event.option.id or 0)]
        if problem.line:
            self.post_message(self.Jump(problem.line, problem.file))


class TimingsPane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__("Timings", "5", **kw)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="timings-scroll"):
            yield Static(id="trials")
            yield Static(id="chart")

    def show(self, view: ViewState) -> None:
        width = max(8, self.size.width - 18)
        self.query_one("#trials", Static).update(render.timing_lines(
            view.stage, view.stage_started, view.trial_timings, view.last_result, time.time(), self.size.width - 2))
        self.query_one("#chart", Static).update(
            render.speedup_chart(view.step_speedups, 1.0, view.compile_baseline, width=width,
                                 height=max(3, self.size.height - 5))
        )
