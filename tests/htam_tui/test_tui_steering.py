"""Pilot tests: each steering action reaches the engine and shows on the screen."""

from __future__ import annotations

import asyncio
import os
import stat
import sys

import pytest
from engine_double import CODE_V1, DIRECTIONS, ScriptedEngine, StepScript, compile_error
from pilot import SMALL, wait_for, wait_text
from screen_text import screen_text

from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.approval import ApprovalScreen


def make_app(engine, **kw) -> HtamApp:
    return HtamApp(engine, settings=UiSettings(bell=False, refresh_hz=50), **kw)


def approval_for(app, step):
    return lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.step == step


async def test_approve_each_step_runs_to_the_end():
    engine = ScriptedEngine(steps=2)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_text(pilot, "Decision needed: step 1")
        await pilot.press("a")
        await wait_for(pilot, approval_for(app, 2))
        await pilot.press("d")  # the candidate as a diff against the best so far (step 1's)
        await wait_text(pilot, "+++ candidate")
        assert "unrolled by 4" in screen_text(app)
        await pilot.press("a")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        await wait_text(pilot, "best 1.25x")
        assert [(rid, d.action, d.by) for rid, d in engine.decisions] == [("1-0", "approve", "person"), ("2-0", "approve", "person")]
        assert "step 2/2" in screen_text(app)
        assert "expected ';'" in screen_text(app)  # step 2's compile error in the errors pane


async def test_veto_with_reason_and_skip():
    engine = ScriptedEngine(steps=2)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("v")
        await wait_text(pilot, "Veto: why?")
        await pilot.press(*"too risky")
        await pilot.press("enter")
        await wait_for(pilot, approval_for(app, 2))
        await pilot.press("s")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        (_, veto), (_, skip) = engine.decisions
        assert (veto.action, veto.reason) == ("veto", "too risky")
        assert skip.action == "skip"
        assert app.view.best_speedup is None


async def test_edit_in_editor_sends_the_edited_code(tmp_path, monkeypatch):
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/scalar loop/edited by hand/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    engine = ScriptedEngine(steps=1)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("e")
        await wait_for(pilot, lambda: engine.decisions)
        (_, decision), = engine.decisions
        assert decision.action == "edit"
        assert "edited by hand" in decision.edited_code and "scalar loop" not in decision.edited_code


async def test_approve_all_switches_policy_and_queue_clears():
    engine = ScriptedEngine(steps=3)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("A")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        assert engine.policy == "auto"
        assert "policy auto" in screen_text(app)
        assert len(engine.decisions) == 1  # steps 2 and 3 were approved by the policy, not a person
        assert not isinstance(app.screen, ApprovalScreen)


async def test_pending_decisions_queue_with_count_and_bell():
    engine = ScriptedEngine(steps=1)
    app = HtamApp(engine, settings=UiSettings(refresh_hz=50))
    bells = []
    app.bell = lambda: bells.append(1)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("escape")  # decide later: stays queued, flagged in the status line
        await wait_text(pilot, "DECISION PENDING (1)")
        assert bells
        await pilot.press("o")
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("a")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        assert "DECISION PENDING" not in screen_text(app)


async def test_pause_resume_and_stop():
    hold = asyncio.Event()
    engine = ScriptedEngine(steps=3, policy="auto", hold=hold)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_text(pilot, "[running]")
        await pilot.press("p")
        await wait_text(pilot, "[paused]")
        assert not engine._running.is_set()
        await pilot.press("p")
        await wait_text(pilot, "[running]")
        assert engine._running.is_set()
        await pilot.press("x")
        hold.set()
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        assert engine.stopped and engine.steps_done == 1
        assert app.view.finished_reason == "stopped"


async def test_step_budget_direction_and_reevaluate():
    hold = asyncio.Event()
    engine = ScriptedEngine(steps=3, policy="auto", hold=hold)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_text(pilot, "step 1/3")
        await pilot.press("n")
        await wait_text(pilot, "Step budget")
        await pilot.press("5", "enter")
        await wait_text(pilot, "step 1/5 ")
        assert engine.steps_planned == 5
        await pilot.press("g")
        await wait_text(pilot, "Direction for the next step")
        await pilot.press("down", "enter")  # the highlighted one starts at the current direction
        await wait_for(pilot, lambda: engine.forced is not None)
        forced = engine.forced
        hold.set()
        await wait_for(pilot, lambda: len(app.view.path) >= 2)
        assert app.view.path[1] == forced  # step 2 went the way the person chose
        await wait_for(pilot, lambda: app.view.best_code is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: engine.evaluated)
        assert engine.evaluated == [engine.best_code]
        await pilot.press("x")


async def test_command_failure_is_reported_not_raised():
    engine = ScriptedEngine(steps=1, policy="auto")
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        await app.command("force_direction", "no_such_direction")
        assert any("unknown direction" in m for m in app.view.messages)


async def test_resume_from_the_session_browser_switches_engines(tmp_path, monkeypatch):
    """The browser's resume stops the run on screen and watches the engine built for the file."""
    opened = []

    def factory(path):
        opened.append(path)
        return ScriptedEngine(steps=1, policy="auto")

    first = ScriptedEngine(steps=3, policy="ask")
    app = make_app(first, engine_factory=factory)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("escape")
        await app.resume_session(tmp_path / "old.htam")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        assert first.stopped and opened == [tmp_path / "old.htam"]
        assert app.engine is not first and app.engine.steps_done == 1


async def test_quit_stops_the_run_and_lets_it_finish():
    engine = ScriptedEngine(steps=3)
    app = make_app(engine)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, approval_for(app, 1))
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: not app.is_running)
    assert engine.stopped and app.session is engine  # run() returned: the session ended cleanly
    assert [d.action for _, d in engine.decisions] == []  # the pending candidate was skipped by the stop
