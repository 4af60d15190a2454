"""Every user action in one table: its binding id (remappable via config `[keys]`),
default key, action name and description. Bindings, the help screen and the command
palette are all generated from here, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class ActionSpec:
    id: str  # binding id: the name a user writes in config [keys]
    key: str
    action: str
    description: str
    show: bool = True  # shown in the footer (the help screen lists all)
    priority: bool = False


MAIN_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("app.help", "question_mark", "help", "Help: list keys"),
    ActionSpec("app.quit", "q", "quit", "Quit"),
    ActionSpec("app.pause", "p", "toggle_pause", "Pause or resume the engine"),
    ActionSpec("app.stop", "x", "stop", "Stop the run after the current step"),
    ActionSpec("app.steps", "n", "set_steps", "Change the step budget"),
    ActionSpec("app.direction", "g", "pick_direction", "Switch direction by hand (next step)"),
    ActionSpec("app.reevaluate", "r", "reevaluate", "Re-evaluate the current best", show=False),
    ActionSpec("app.approvals", "o", "open_approval", "Open the pending decision"),
    ActionSpec("app.approve_all", "A", "approve_all", "Approve all: switch the policy to auto", show=False),
    ActionSpec("app.sessions", "b", "sessions", "Session browser"),
    ActionSpec("app.memory", "m", "memory", "Memory browser"),
    ActionSpec("app.diff", "d", "toggle_diff", "Source: toggle diff against the previous best", show=False),
    ActionSpec("app.kernel", "k", "toggle_kernel", "Source: toggle module / kernel-only (C++ highlighted)", show=False),
    ActionSpec("app.zoom", "z", "zoom", "Zoom (maximize) the focused pane, again to restore"),
    ActionSpec("app.wider", "right_square_bracket", "resize(1)", "Widen the source pane", show=False),
    ActionSpec("app.narrower", "left_square_bracket", "resize(-1)", "Narrow the source pane", show=False),
    ActionSpec("app.taller", "right_curly_bracket", "resize_bottom(1)", "Grow the bottom panes", show=False),
    ActionSpec("app.shorter", "left_curly_bracket", "resize_bottom(-1)", "Shrink the bottom panes", show=False),
    ActionSpec("app.pane_source", "1", "focus_pane('source')", "Focus the kernel source pane", show=False),
    ActionSpec("app.pane_direction", "2", "focus_pane('direction')", "Focus the global direction pane", show=False),
    ActionSpec("app.pane_strategies", "3", "focus_pane('strategies')", "Focus the local strategies pane", show=False),
    ActionSpec("app.pane_errors", "4", "focus_pane('errors')", "Focus the compiler/runtime errors pane", show=False),
    ActionSpec("app.pane_timings", "5", "focus_pane('timings')", "Focus the timings pane", show=False),
    ActionSpec("app.palette", "ctrl+p", "command_palette", "Command palette", show=False),
)

APPROVAL_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("approval.approve", "a", "approve", "Approve the candidate", priority=True),
    ActionSpec("approval.veto", "v", "veto", "Veto with a reason", priority=True),
    ActionSpec("approval.edit", "e", "edit", "Edit in $EDITOR, then evaluate", priority=True),
    ActionSpec("approval.skip", "s", "skip", "Skip this candidate", priority=True),
    ActionSpec("approval.approve_all", "A", "approve_all", "Approve all (policy auto)", priority=True),
    ActionSpec("approval.diff", "d", "toggle_diff", "Toggle diff / full candidate"),
    ActionSpec("approval.later", "escape", "later", "Decide later (keep it queued)"),
)

SESSIONS_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("sessions.open", "enter", "open", "Show the steps of the session / resume it"),
    ActionSpec("sessions.resume", "R", "resume", "Resume the selected session in the app"),
    ActionSpec("sessions.branch", "B", "branch", "Branch from the selected step"),
    ActionSpec("sessions.export", "E", "export", "Export the best candidate"),
    ActionSpec("sessions.back", "escape", "back", "Back"),
)

MEMORY_ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("memory.filter", "slash", "filter", "Filter directions and strategies by text"),
    ActionSpec("memory.transitions", "t", "focus_transitions", "Transitions table of the direction"),
    ActionSpec("memory.tree", "w", "focus_tree", "Back to the tree"),
    ActionSpec("memory.back", "escape", "back", "Back"),
)


def bindings(specs: tuple[ActionSpec, ...]) -> list[Binding]:
    return [
        Binding(s.key, s.action, s.description, show=s.show, id=s.id, priority=s.priority) for s in specs
    ]


ALL_ACTIONS: tuple[ActionSpec, ...] = MAIN_ACTIONS + APPROVAL_ACTIONS + SESSIONS_ACTIONS + MEMORY_ACTIONS


def key_label(key: str) -> str:
    """The key as a person types it ('question_mark' -> '?')."""
    from textual.keys import format_key

    return ", ".join(format_key(k.strip()) for k in key.split(","))
