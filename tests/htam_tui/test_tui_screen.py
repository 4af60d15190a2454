"""Pilot tests of the main screen's panes and keys on the real engine (open_engine, loopback
model server): zoom, pane focus and resizing, help, command palette, key remapping; plus the
C++ error jump and the throttled event pump."""

from __future__ import annotations

import asyncio

from engine_double import CODE_V1, ScriptedEngine, StepScript, compile_error
from pilot import SMALL, wait_for, wait_text
from real_engine import app_on, engine, server  # noqa: F401 - the server fixture
from screen_text import screen_text
from textual.widgets import TextArea

from htam_engine.loop import events as ev
from htam_tui import bridge
from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.approval import ApprovalScreen


def waiting(app):
    """Step 1's candidate is waiting for a person (the engine is live, nothing evaluated)."""
    return lambda: bool(app.view.pending)


async def test_cpp_compiler_error_moves_the_source_to_its_kernel_line():
    """On the stand-in engine: a C++ compiler's message needs a load_inline build (20 s+ on
    the CI's CPU per source); the double supplies the parsed message the harness would give."""
    engine_ = ScriptedEngine([StepScript(CODE_V1, compile_error())], steps=1, policy="auto")
    app = HtamApp(engine_, settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        await wait_text(pilot, "expected ';'")
        await pilot.press("4", "enter")  # focus errors, select the first (main.cpp:7)
        area = app.query_one("#source", TextArea)
        # main.cpp line 7 is line 6 of the module's C++ string (load_inline adds one include line)
        await wait_for(pilot, lambda: area.has_focus and area.cursor_location[0] == 5)
        assert area.language == "cpp"  # a compiler's file: the kernel-only view
        kernel = CODE_V1.split('"""')[1]
        assert area.document.get_line(5) == kernel.split("\n")[5]


async def test_zoom_focus_and_resize_panes(server, tmp_path):
    e = engine(server, tmp_path, policy="auto")
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: app.view.engine_state == "finished", timeout=30)
        await pilot.press("2")
        assert app.focused.id == "direction-scroll"
        await pilot.press("z")
        assert app.screen.maximized is app.query_one("#direction-pane")
        await wait_text(pilot, e.session.steps[0].selection.direction)  # the engine's choice, zoomed
        await pilot.press("z")
        assert app.screen.maximized is None
        width = app.query_one("#source-pane").size.width
        await pilot.press("1", "right_square_bracket")
        await pilot.pause()
        assert app.query_one("#source-pane").size.width > width
        height = app.query_one("#bottom").size.height
        await pilot.press("left_curly_bracket")
        await pilot.pause()
        assert app.query_one("#bottom").size.height < height


async def test_help_lists_every_binding_id_and_remapped_keys(server, tmp_path):
    app = app_on(engine(server, tmp_path, policy="auto"), tmp_path, keymap={"app.pause": "P"})
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.view.engine_state == "finished", timeout=30)
        await pilot.press("question_mark")
        await wait_text(pilot, "remap in config [keys] by id")
        text = screen_text(app)
        assert "app.pause" in text and "approval.veto" in text
        assert "esc or ? closes" in text  # how to leave is on the screen
        await pilot.press("end")
        await wait_text(pilot, "memory.filter")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: len(app.screen_stack) == 1)


async def test_remapped_key_drives_the_engine(server, tmp_path):
    e = engine(server, tmp_path)
    app = app_on(e, tmp_path, keymap={"app.pause": "P", "app.nope": "z"})
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, waiting(app), timeout=30)
        assert any("unknown binding id(s) app.nope" in m for m in app.view.messages)
        await pilot.press("p")  # the default key no longer pauses
        await pilot.pause(0.1)
        assert e._running.is_set()
        await pilot.press("P")
        await wait_text(pilot, "[pausing]")
        assert not e._running.is_set()
        await pilot.press("x")
        await wait_for(pilot, lambda: app.view.engine_state == "finished", timeout=30)
        assert [c.decision.by for c in e.session.steps[0].candidates] == ["stop"]


async def test_command_palette_runs_actions(server, tmp_path):
    e = engine(server, tmp_path)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, waiting(app), timeout=30)
        await pilot.press("ctrl+p")
        await pilot.press(*"pause or resume")
        await wait_text(pilot, "key p")
        await pilot.press("enter")
        await wait_text(pilot, "[pausing]")
        assert not e._running.is_set()
        await pilot.press("x")
        await wait_for(pilot, lambda: app.view.engine_state == "finished", timeout=30)
        assert e.finish_reason == "stopped"


async def test_pump_batches_a_burst_into_few_messages():
    from htam_engine.loop.bus import EventBus

    class Sink:
        def __init__(self):
            self.batches = []

        def post_message(self, m):
            if isinstance(m, bridge.EngineEvents):
                self.batches.append(m.events)
            return True

    bus = EventBus(maxsize=10_000)
    bus.bind_loop()
    sink = Sink()
    task = asyncio.create_task(bridge.pump(bus.subscribe(), sink, refresh_hz=10))
    for i in range(2000):
        bus.publish(ev.TokensStreamed(1, text="x"))
        if i % 100 == 0:
            await asyncio.sleep(0.01)
    bus.publish(ev.StepFinished(1))
    bus.close()
    await asyncio.wait_for(task, 5)
    events = [e for b in sink.batches for e in b]
    assert "".join(e.text for e in events if isinstance(e, ev.TokensStreamed)) == "x" * 2000
    assert isinstance(events[-1], ev.StepFinished)
    assert len(sink.batches) <= 5  # ~0.2 s of events at 10 Hz: a handful of repaints, not 2001


async def test_the_palette_lists_quit_once_and_the_decision_screen_waits_for_o():
    app = HtamApp(None, settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("ctrl+p", *"quit")
        await wait_text(pilot, "key q")
        quits = [line for line in screen_text(app).splitlines() if "Quit" in line]
        assert len(quits) == 1, quits
        await pilot.press("escape")

    engine_ = ScriptedEngine(steps=1, policy="ask")
    app = HtamApp(engine_, settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: app.view.decision is not None)
        await wait_text(pilot, "DECIDE step 1")
        assert not isinstance(app.screen, ApprovalScreen)  # the panes stay in view
        text = screen_text(app)
        assert "memory_access · memory_access: float4 loads (+1)" in text  # what produced the candidate
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")


async def test_80x24_keeps_names_and_values_apart(tmp_path):
    """What the issue found cut or run together at 80x24: the k=1 term's value, the problem
    name in the header, tree labels against the detail column, a branch's file name."""
    from session_files import write_session

    from htam_engine.memory import HTG
    from htam_engine.session import branch_session

    write_session(tmp_path / "double_relu-20260101-000000.htam", [1.25, 1.5])
    branch_session(tmp_path / "double_relu-20260101-000000.htam", 1)
    app = HtamApp(ScriptedEngine(steps=2, policy="auto"), htg=HTG.seed(), sessions_dir=tmp_path,
                  settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        await wait_text(pilot, "k=1 +0.160")
        assert screen_text(app).splitlines()[0].rstrip().endswith("demo_scale")
        await pilot.press("m")
        await wait_text(pilot, "memory_access (")
        rows = screen_text(app).splitlines()[1:8]
        assert all(row[31] == "│" for row in rows), rows  # the tree's labels stop at its rule
        await pilot.press("escape", "b")
        await wait_text(pilot, "branch1.htam")
        assert "double_relu-20260101-000000.htam" in screen_text(app)
