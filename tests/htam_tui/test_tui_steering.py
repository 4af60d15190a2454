"""Pilot tests: each steering action changes the engine and the screen."""

from __future__ import annotations

import asyncio

from engine_double import CODE_V1, DIRECTIONS, ScriptedEngine

from screen_text import screen_text

from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.approval import ApprovalScreen

SIZE = (80, 24)


async def wait_for(pilot, cond, timeout=5.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


async def wait_text(pilot, app, text, timeout=5.0):
    await wait_for(pilot, lambda: text in screen_text(app), timeout)


async def test_approve_each_step_runs_to_the_end():
    engine = ScriptedEngine(steps=2)
    app = HtamApp(engine, settings=UiSettings(bell=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await wait_text(pilot, app, "Decision needed: step 1")
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.step == 2)
        await pilot.press("a")
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        assert [d.action for _, d in engine.decisions] == ["approve", "approve"]
        assert app.view.step == 2
        assert "best 1.25x" in screen_text(app) or app.view.best_speedup == 1.25
