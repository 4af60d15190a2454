"""Memory browser: directions -> strategies as a lazily filled tree, the transitions table of
a direction, a strategy's full text and where it was used, and filter-as-you-type.

Stays quick on a bank of 10,000 strategies: only titles are indexed up front, a direction's
strategies are added when it is expanded, and in chunks (a "more" node loads the next chunk).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static, Tree
from textual.widgets.tree import TreeNode

from htam_tui.actions import MEMORY_ACTIONS, KeyBar, bindings

CHUNK = 200  # strategies added to the tree per expansion step


@dataclass(slots=True, frozen=True)
class Node:
    kind: str  # direction | strategy | more
    id: str
    offset: int = 0  # for "more": where the next chunk starts


class TitleIndex:
    """Strategy ids per direction and their titles, read from the memory only when needed:
    opening the browser costs the direction list, expanding costs one chunk of titles, and the
    first filter keystroke reads all titles once."""

    def __init__(self, htg) -> None:
        self.htg = htg
        self.directions: list[str] = list(htg.directions())
        self._ids: dict[str, list[str]] = {}
        self._titles: dict[str, str] = {}

    def ids(self, direction: str) -> list[str]:
        if direction not in self._ids:
            self._ids[direction] = list(self.htg.strategy_ids(direction))
        return self._ids[direction]

    def title(self, sid: str) -> str:
        if sid not in self._titles:
            self._titles[sid] = str(self.htg.strategy_attrs(sid).get("title", sid))
        return self._titles[sid]

    def matching(self, direction: str, text: str) -> list[str]:
        ids = self.ids(direction)
        if not text:
            return ids
        needle = text.lower()
        return [sid for sid in ids if needle in self.title(sid).lower() or needle in sid.lower()]


def transition_label(direction: str, source: str, target: str) -> str:
    """A row of `direction`'s transitions named by its other end: "→ to" leaves it, "← from"
    enters it, "↻ itself" stays."""
    if source == target:
        return "↻ itself"
    return f"→ {target}" if source == direction else f"← {source}"


def strategy_text(view, attrs: dict) -> Text:
    t = Text()
    t.append(view.title + "\n", style="bold")
    t.append(f"{view.id}  under {view.direction}  [{attrs.get('source', '')}]\n", style="dim")
    t.append(f"{view.tries} tries, {view.successes} successes, mean gain {view.mean_gain:+.3f}\n")
    if view.template:
        t.append(f"offline template: {view.template}\n", style="dim")
    for label, key in (("applies to families", "families"), ("backends", "backends"), ("states", "states")):
        if attrs.get(key):
            t.append(f"{label}: {', '.join(map(str, attrs[key]))}\n", style="dim")
    t.append("\n" + view.description + "\n")
    if view.pitfalls:
        t.append("\npitfalls: ", style="bold yellow")
        t.append(view.pitfalls + "\n")
    uses = attrs.get("uses") or []
    t.append(f"\nused {len(uses)} time(s) recently" + (":\n" if uses else "\n"), style="bold")
    for use in uses[-10:][::-1]:
        session, step, reward = (list(use) + [None, None, None])[:3]
        t.append(f"  {session or '-'} step {step}: reward {float(reward or 0):+.3f}\n")
    last = attrs.get("last_used") or 0
    if last:
        t.append(f"last used {time.strftime('%Y-%m-%d %H:%M', time.gmtime(last))} UTC\n", style="dim")
    return t


class MemoryScreen(Screen[None]):
    BINDINGS = bindings(MEMORY_ACTIONS)

    def __init__(self, htg, session=None) -> None:
        super().__init__()
        self.htg = htg
        self.session = session
        self.index: TitleIndex | None = None
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: type in the tree (or /) to narrow directions and strategies",
                    id="memory-filter", select_on_focus=False)  # a typed first key must not get selected
        with Horizontal(id="memory-body"):
            yield Tree("memory", id="memory-tree")
            with Vertical(id="memory-side"):
                with VerticalScroll(id="memory-detail-box"):
                    yield Static(id="memory-detail")
                yield DataTable(id="memory-transitions", cursor_type="row", zebra_stripes=True)
        yield KeyBar(MEMORY_ACTIONS, classes="keybar")

    def on_mount(self) -> None:
        tree = self.query_one(Tree)
        tree.show_root = False
        table = self.query_one(DataTable)
        # The other end first and the numbers next, short headers (n: moves, reward: their mean):
        # at 80x24 the table is ~48 columns wide.
        table.add_columns("transition", "n", "reward", "ok", "prior", "notes")
        if self.htg is None:
            self.query_one("#memory-detail", Static).update(Text("no memory loaded", style="dim"))
            return
        self.index = TitleIndex(self.htg)
        self.rebuild()
        tree.focus()

    # ---- tree ---------------------------------------------------------------------------
    def rebuild(self) -> None:
        tree = self.query_one(Tree)
        tree.clear()
        assert self.index is not None
        for d in self.index.directions:
            n = len(self.index.matching(d, self.filter_text))
            if self.filter_text and n == 0:
                continue
            tree.root.add(f"{d} ({n})", data=Node("direction", d), allow_expand=n > 0)
        if tree.root.children:
            first = tree.root.children[0]
            tree.move_cursor(first)
            self.show_direction(first.data.id)  # the cursor may not move, so no highlight event

    def _fill(self, node: TreeNode, direction: str, offset: int) -> None:
        assert self.index is not None
        rows = self.index.matching(direction, self.filter_text)
        for sid in rows[offset:offset + CHUNK]:
            node.add_leaf(self.index.title(sid), data=Node("strategy", sid))
        rest = len(rows) - (offset + CHUNK)
        if rest > 0:
            node.add_leaf(Text(f"… {rest} more (enter to load, or filter)", style="dim"),
                          data=Node("more", direction, offset + CHUNK))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        data = event.node.data
        if isinstance(data, Node) and data.kind == "direction" and not event.node.children:
            self._fill(event.node, data.id, 0)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if isinstance(data, Node) and data.kind == "more":
            parent = event.node.parent
            event.node.remove()
            if parent is not None:
                self._fill(parent, data.id, data.offset)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if not isinstance(data, Node):
            return
        if data.kind == "direction":
            self.show_direction(data.id)
        elif data.kind == "strategy":
            self.show_strategy(data.id)

    # ---- detail -------------------------------------------------------------------------
    def show_direction(self, direction: str) -> None:
        info = self.htg.direction_info(direction) if hasattr(self.htg, "direction_info") else {}
        t = Text()
        t.append(f"{direction}\n", style="bold cyan")
        if info.get("title"):
            t.append(f"{info['title']}\n", style="bold")
        if info.get("description"):
            t.append(f"{info['description']}\n")
        assert self.index is not None
        t.append(f"{len(self.index.ids(direction))} strategies; transitions below (t)", style="dim")
        self.query_one("#memory-detail", Static).update(t)
        table = self.query_one(DataTable)
        table.clear()
        for row in self.htg.transitions(direction):
            notes = "; ".join(filter(None, (n.why or n.risk or n.when for n in row.notes)))
            table.add_row(transition_label(direction, row.from_direction, row.to_direction), str(row.count),
                          f"{row.mean_reward:+.3f}", str(row.successes), f"{row.prior_value:+.2f}", notes or "-")

    def show_strategy(self, sid: str) -> None:
        view = self.htg.strategy(sid)
        attrs = self.htg.strategy_attrs(sid) if hasattr(self.htg, "strategy_attrs") else {}
        self.query_one("#memory-detail", Static).update(strategy_text(view, attrs))

    # ---- filter -------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self.index is not None:
            self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(Tree).focus()

    def on_key(self, event: events.Key) -> None:
        """Typing a printable key in the tree starts the filter with it (filter by typing). Keys
        this screen binds (/, t, w, as remapped) keep their action, and space still toggles a
        node; the app's own letter keys (pause, quit, ...) give way to the filter here."""
        tree = self.query_one(Tree)
        if not (tree.has_focus and event.is_printable and event.character and event.character != " "):
            return
        own = {key for key, active in self.active_bindings.items() if active.node is self}
        if event.key in own:
            return
        event.stop()
        event.prevent_default()
        box = self.query_one(Input)
        # Focus now, not after this event: the keys typed next (already queued when a person
        # types fast) must reach the filter as text, not the tree's bindings (t, w).
        self.set_focus(box)
        box.insert_text_at_cursor(event.character)

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_focus_transitions(self) -> None:
        self.query_one(DataTable).focus()

    def action_focus_tree(self) -> None:
        self.query_one(Tree).focus()

    def action_back(self) -> None:
        self.dismiss(None)
