"""Every key, generated from the action table (with the user's remapped keys)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from htam_tui.actions import ALL_ACTIONS, key_label


def help_table(keymap: dict[str, str]) -> Table:
    table = Table(title=Text("htam keys (remap in config [keys] by id)"), expand=True, header_style="bold")
    table.add_column("key", no_wrap=True)
    table.add_column("action")
    table.add_column("id", style="dim", no_wrap=True)
    for spec in ALL_ACTIONS:
        table.add_row(key_label(keymap.get(spec.id, spec.key)), spec.description, spec.id)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("question_mark", "close", "Close", show=False, id="help.close2"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(help_table(dict(getattr(self.app, "keymap", {}))))

    def on_mount(self) -> None:
        box = self.query_one("#help")
        box.border_title = "keys"
        box.border_subtitle = "esc or ? closes · ↑↓ PgUp PgDn scroll"
        box.focus()

    def action_close(self) -> None:
        self.dismiss(None)
