"""Every user action in one table: its binding id (remappable via config `[keys]`),
default key, action name and description. Bindings, the help screen and the command
palette are all generated from here, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static


@dataclass(frozen=True, slots=True)
class ActionSpec:
    id: str  # binding id: the name a user writes in config [keys]
    key: str
    action: str
    description: str
    show: bool = True  # shown in the key bar (the help screen lists all)
    priority: bool = False
    short: str = ""  # the key bar's label; the description when empty

    @property
    def label(self) -> str:
        return self.short or self.description


MAIN_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("app.help", "question_mark", "help", "Help: list keys", short="help"),
    ActionSpec("app.quit", "q", "quit", "Quit", short="quit"),
    ActionSpec("app.palette", "ctrl+p", "command_palette", "Command palette", short="palette"),
    ActionSpec("app.approvals", "o", "open_approval", "Open the pending decision on its own screen", short="decide"),
    ActionSpec("app.approve", "a", "decide('approve')", "Approve the pending candidate", show=False),
    ActionSpec("app.veto", "v", "decide('veto')", "Veto the pending candidate, with a reason", show=False),
    ActionSpec("app.edit", "e", "decide('edit')", "Edit the pending candidate in $EDITOR, then evaluate", show=False),
    ActionSpec("app.skip", "s", "decide('skip')", "Skip the pending candidate", show=False),
    ActionSpec("app.pause", "p", "toggle_pause", "Pause or resume the engine", short="pause"),
    ActionSpec("app.memory", "m", "memory", "Memory browser", short="memory"),
    ActionSpec("app.sessions", "b", "sessions", "Session browser", short="sessions"),
    ActionSpec("app.direction", "g", "pick_direction", "Switch direction by hand (next step)", short="direction"),
    ActionSpec("app.steps", "n", "set_steps", "Change the step budget", short="steps"),
    ActionSpec("app.stop", "x", "stop", "Stop the run after the current step", short="stop"),
    ActionSpec("app.zoom", "z", "zoom", "Zoom (maximize) the focused pane, again to restore", short="zoom"),
    ActionSpec("app.reevaluate", "r", "reevaluate", "Re-evaluate the current best", show=False),
    ActionSpec("app.approve_all", "A", "approve_all", "Approve all: the pending ones and, policy auto, every later one",
               show=False),
    ActionSpec("app.diff", "d", "toggle_diff", "Source: toggle diff against the previous best", show=False),
    ActionSpec("app.kernel", "k", "toggle_kernel", "Source: toggle module / kernel-only (C++ highlighted)", show=False),
    ActionSpec("app.wider", "right_square_bracket", "resize(1)", "Widen the source pane", show=False),
    ActionSpec("app.narrower", "left_square_bracket", "resize(-1)", "Narrow the source pane", show=False),
    ActionSpec("app.taller", "right_curly_bracket", "resize_bottom(1)", "Grow the bottom panes", show=False),
    ActionSpec("app.shorter", "left_curly_bracket", "resize_bottom(-1)", "Shrink the bottom panes", show=False),
    ActionSpec("app.pane_source", "1", "focus_pane('source')", "Focus the kernel source pane", show=False),
    ActionSpec("app.pane_direction", "2", "focus_pane('direction')", "Focus the global direction pane", show=False),
    ActionSpec("app.pane_strategies", "3", "focus_pane('strategies')", "Focus the local strategies pane", show=False),
    ActionSpec("app.pane_errors", "4", "focus_pane('errors')", "Focus the compiler/runtime errors pane", show=False),
    ActionSpec("app.pane_timings", "5", "focus_pane('timings')", "Focus the timings pane", show=False),
)

APPROVAL_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("approval.approve", "a", "approve", "Approve the candidate", priority=True, short="approve"),
    ActionSpec("approval.veto", "v", "veto", "Veto with a reason", priority=True, short="veto"),
    ActionSpec("approval.edit", "e", "edit", "Edit in $EDITOR, then evaluate", priority=True, short="edit"),
    ActionSpec("approval.skip", "s", "skip", "Skip this candidate", priority=True, short="skip"),
    ActionSpec("approval.approve_all", "A", "approve_all", "Approve all (policy auto)", priority=True, short="approve all"),
    ActionSpec("approval.diff", "d", "toggle_diff", "Toggle diff / full candidate", short="diff"),
    ActionSpec("approval.later", "escape", "later", "Decide later (keep it queued)", short="later"),
)

SESSIONS_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("sessions.open", "enter", "open", "Show the steps of the session / resume it", short="open"),
    ActionSpec("sessions.resume", "R", "resume", "Resume the selected session in the app", short="resume"),
    ActionSpec("sessions.branch", "B", "branch", "Branch from the selected step", short="branch"),
    ActionSpec("sessions.export", "E", "export", "Export the best candidate", short="export"),
    ActionSpec("sessions.back", "escape", "back", "Back", short="back"),
)

MEMORY_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("memory.filter", "slash", "filter", "Filter directions and strategies by text", short="filter"),
    ActionSpec("memory.transitions", "t", "focus_transitions", "Transitions table of the direction", short="transitions"),
    ActionSpec("memory.tree", "w", "focus_tree", "Back to the tree", short="tree"),
    ActionSpec("memory.back", "escape", "back", "Back", short="back"),
)


def bindings(specs: tuple[ActionSpec, ...]) -> list[Binding]:
    return [
        Binding(s.key, s.action, s.label, tooltip=s.description, show=s.show, id=s.id, priority=s.priority)
        for s in specs
    ]


ALL_ACTIONS: tuple[ActionSpec, ...] = MAIN_ACTIONS + APPROVAL_ACTIONS + SESSIONS_ACTIONS + MEMORY_ACTIONS


def key_label(key: str) -> str:
    """The key as a person types it ('question_mark' -> '?')."""
    from textual.keys import format_key

    return ", ".join(format_key(k.strip()) for k in key.split(","))


class KeyBar(Static):
    """One line of the screen's keys, built once from the action table and the user's keymap.

    Stands in for Textual's Footer, which recomposes itself on every focus change (tens of
    milliseconds each time, felt over a slow link)."""

    def __init__(self, specs: tuple[ActionSpec, ...], **kw) -> None:
        super().__init__(**kw)
        self.specs = specs

    def on_mount(self) -> None:
        self.fit()

    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        """Whole entries in table order while they fit the width (none cut in half); the
        help screen (?) and the command palette list every action."""
        keymap = dict(getattr(self.app, "keymap", {}))
        width = self.size.width or 10_000
        bar = Text(no_wrap=True, overflow="ellipsis")
        for spec in self.specs:
            if not spec.show:
                continue
            key, label = f" {key_label(keymap.get(spec.id, spec.key))} ", f"{spec.label} "
            if bar.cell_len + len(key) + len(label) > width:
                break
            bar.append(key, style="bold reverse")
            bar.append(label)
        self.update(bar)
