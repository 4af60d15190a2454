"""Memory browser on a 10,000-strategy bank: lazy chunked tree, more-node, filter, details."""

from __future__ import annotations

from pilot import SMALL, wait_for, wait_text
from textual import events
from screen_text import screen_text
from textual.widgets import DataTable, Input, Tree

from htam_engine.memory import HTG
from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.memory import CHUNK, MemoryScreen


def big_bank(n: int = 10_000) -> HTG:
    htg = HTG.seed()
    dirs = htg.directions()
    for i in range(n - len(htg.strategy_ids())):
        d = dirs[i % len(dirs)]
        htg.add_strategy(d, f"strategy {i} for {d}", f"description of strategy {i}", id=f"{d}/bench-{i}")
    return htg


async def open_browser(pilot, app, htg) -> Tree:
    """Press m and wait for the tree of every direction."""
    await pilot.press("m")
    await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen))
    tree = app.screen.query_one(Tree)
    await wait_for(pilot, lambda: len(tree.root.children) == len(htg.directions()))
    return tree


async def test_lazy_tree_filter_and_details_on_a_big_bank():
    htg = big_bank()
    app = HtamApp(None, htg=htg, settings=UiSettings(bell=False))
    async with app.run_test(size=SMALL) as pilot:
        tree = await open_browser(pilot, app, htg)
        assert all(not d.children for d in tree.root.children)  # nothing loaded before expansion
        await pilot.press("down", "enter")  # memory_access
        node = tree.root.children[1]
        await wait_for(pilot, lambda: len(node.children) == CHUNK + 1)
        assert node.children[-1].data.kind == "more"
        await pilot.press("down")
        await wait_text(pilot, "mean gain")  # the strategy's full text
        table = app.screen.query_one(DataTable)
        assert table.row_count > 0  # transitions of the direction, numbers in view at 80x24
        await wait_text(pilot, "← data_reuse")
        assert " n  reward " in screen_text(app)  # the count and mean reward in view at 80x24
        await pilot.press("slash", *"strategy 9000")
        await wait_for(pilot, lambda: len(tree.root.children) == 1)
        await wait_text(pilot, "(1)")


async def test_typing_in_the_tree_starts_the_filter():
    """No `/` first: a printable key in the tree goes to the filter; the screen's own keys
    (t: transitions) keep their action, and app letters (p: pause) do not fire here."""
    htg = HTG.seed()
    app = HtamApp(None, htg=htg, settings=UiSettings(bell=False))
    async with app.run_test(size=SMALL) as pilot:
        tree = await open_browser(pilot, app, htg)
        await pilot.press(*"fusion")
        box = app.screen.query_one(Input)
        assert box.value == "fusion" and box.has_focus
        await wait_for(pilot, lambda: len(tree.root.children) < len(htg.directions()))
        assert any(str(n.label).startswith("operator_fusion") for n in tree.root.children)
        await pilot.press("enter")  # back to the tree, the filter stays
        assert tree.has_focus
        await pilot.press("t")
        assert app.screen.query_one(DataTable).has_focus and box.value == "fusion"
        await pilot.press("w", "p")  # p extends the filter instead of pausing
        assert box.value == "fusionp"
        await pilot.press("escape")


async def test_fast_typing_keeps_every_letter_of_the_filter():
    """Keys that arrive together (fast typing, a paste over SSH) all reach the filter: t and w
    are the tree's keys, but not while the filter is being typed."""
    htg = HTG.seed()
    app = HtamApp(None, htg=htg, settings=UiSettings(bell=False))
    async with app.run_test(size=SMALL) as pilot:
        await open_browser(pilot, app, htg)
        for ch in "vectorization":  # queued at once, as a terminal delivers them
            app.post_message(events.Key(ch, ch))
        box = app.screen.query_one(Input)
        await wait_for(pilot, lambda: len(box.value) >= len("vecorizaion"))
        await pilot.pause()
        assert box.value == "vectorization"
