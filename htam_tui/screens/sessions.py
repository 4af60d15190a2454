"""Session browser: the sessions in a folder (problem, steps, best speedup, last change);
Enter shows a session's steps (direction and result of each); from there resume it in the
app, branch from the highlighted step, or export its best candidate."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from htam_tui.actions import SESSIONS_ACTIONS, KeyBar, bindings
from htam_tui.render import fmt_speedup


FILE_WIDTH = 34  # the file column at 80x24; longer names lose their middle, not their end


def when(ts: float | None) -> str:
    return time.strftime("%m-%d %H:%M", time.gmtime(ts)) if ts else "-"


def short_name(name: str, width: int = FILE_WIDTH) -> str:
    """A file name that fits `width`, keeping its start and its end (where a branch's
    ".branchK" and the suffix are), so a branch and its original tell apart."""
    if len(name) <= width:
        return name
    tail = width * 2 // 3
    return name[: width - tail - 1] + "…" + name[-tail:]


def step_result(record: Any) -> str:
    outcome = record.outcome
    if outcome is None:
        return "no outcome"
    if outcome.decision is not None and outcome.decision.action in ("veto", "skip"):
        return outcome.decision.action
    r = outcome.result
    if r is None:
        return outcome.failure or "not evaluated"
    return f"{r.status.value} {fmt_speedup(r.speedup_eager)}" if r.ok else r.status.value


class SessionsScreen(Screen[None]):
    BINDINGS = bindings(SESSIONS_ACTIONS)

    def __init__(self, folder: Path | None) -> None:
        super().__init__()
        self.folder = folder
        self.rows: list[dict[str, Any]] = []
        self.opened: Any = None  # the loaded Session whose steps are shown
        self.opened_path: Path | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="sessions-head")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="steps", cursor_type="row", zebra_stripes=True)
        yield KeyBar(SESSIONS_ACTIONS, classes="keybar")

    def on_mount(self) -> None:
        self.query_one("#steps").display = False
        table = self.query_one("#sessions", DataTable)
        table.add_columns("file", "steps", "best", "changed UTC", "problem")
        self.query_one("#steps", DataTable).add_columns("step", "direction", "result", "best so far", "reward")
        self.load()
        table.focus()

    def load(self) -> None:
        from htam_engine.session import list_sessions, sessions_dir

        folder = Path(self.folder or sessions_dir())
        table = self.query_one("#sessions", DataTable)
        table.clear()
        try:
            listed = list_sessions(folder)
        except Exception as exc:  # noqa: BLE001 - shown, not raised
            self.head(f"cannot list {folder}: {exc}", error=True)
            return
        self.rows = sorted(listed, key=lambda r: r.get("updated_at") or 0, reverse=True)
        for r in self.rows:
            name = short_name(Path(str(r.get("path", ""))).name)
            if r.get("error"):
                table.add_row(name, "-", "-", "-", f"unreadable: {r['error']}")
                continue
            table.add_row(name, str(r.get("steps", "?")), fmt_speedup(r.get("best_speedup")),
                          when(r.get("updated_at")), str(r.get("problem", "?")))
        self.head(f"{len(self.rows)} session(s) in {folder}   enter: steps  R resume  E export  esc back")

    def head(self, text: str, error: bool = False) -> None:
        self.query_one("#sessions-head", Static).update(Text(text, style="bold red" if error else "bold"))

    def selected_path(self) -> Path | None:
        if self.opened_path is not None and self.query_one("#steps").display:
            return self.opened_path
        table = self.query_one("#sessions", DataTable)
        if not self.rows or table.cursor_row is None or table.cursor_row >= len(self.rows):
            return None
        row = self.rows[table.cursor_row]
        return None if row.get("error") else Path(str(row["path"]))

    def load_selected(self) -> Any:
        from htam_engine.session import load_session

        path = self.selected_path()
        if path is None:
            self.app.notify("no session selected", severity="warning")
            return None
        try:
            return load_session(path)
        except Exception as exc:  # noqa: BLE001
            self.app.report(f"{exc}")
            return None

    # ---- actions ------------------------------------------------------------------------
    def action_open(self) -> None:
        if self.query_one("#steps").display:
            self.action_branch()
            return
        session = self.load_selected()
        if session is None:
            return
        self.opened, self.opened_path = session, self.selected_path()
        steps = self.query_one("#steps", DataTable)
        steps.clear()
        for rec in session.steps:
            steps.add_row(str(rec.step), rec.selection.direction or "-", step_result(rec),
                          fmt_speedup(rec.best_speedup), f"{rec.reward:+.3f}")
        self.query_one("#sessions").display = False
        steps.display = True
        steps.focus()
        self.head(f"{session.problem.id}: {len(session.steps)} steps   B/enter branch here  R resume  E export  esc back")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_resume(self) -> None:
        path = self.selected_path()
        if path is None:
            return
        self.dismiss(None)
        self.app.call_later(self.app.resume_session, path)

    def action_branch(self) -> None:
        from htam_engine.session import branch_session

        if self.opened_path is None or not self.query_one("#steps").display:
            self.app.notify("open a session (enter) and pick the step to branch from", severity="warning")
            return
        steps = self.query_one("#steps", DataTable)
        if not self.opened.steps:
            self.app.notify("the session has no steps to branch from", severity="warning")
            return
        at = self.opened.steps[steps.cursor_row].step
        try:
            to = branch_session(self.opened_path, at)
        except Exception as exc:  # noqa: BLE001
            self.app.report(f"branch: {exc}")
            return
        self.app.notify(f"branched at step {at}: {to}")
        self.back_to_list()

    def action_export(self) -> None:
        from htam_engine.session import export_best

        session = self.opened if self.query_one("#steps").display else self.load_selected()
        if session is None:
            return
        try:
            to = export_best(session)
        except Exception as exc:  # noqa: BLE001
            self.app.report(f"export: {exc}")
            return
        self.app.notify(f"best candidate exported to {to}")

    def back_to_list(self) -> None:
        self.query_one("#steps").display = False
        self.query_one("#sessions").display = True
        self.opened = self.opened_path = None
        self.load()
        self.query_one("#sessions").focus()

    def action_back(self) -> None:
        if self.query_one("#steps").display:
            self.back_to_list()
        else:
            self.dismiss(None)
