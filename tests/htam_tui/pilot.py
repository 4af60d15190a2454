"""Helpers for driving the app with Textual's pilot."""

from __future__ import annotations

import asyncio

from screen_text import screen_text

SMALL = (80, 24)


async def wait_for(pilot, cond, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"condition not met in {timeout}s; screen:\n{screen_text(pilot.app)}")
        await pilot.pause(0.02)


async def wait_text(pilot, text: str, timeout: float = 5.0) -> None:
    await wait_for(pilot, lambda: text in screen_text(pilot.app), timeout)


def deciding(app, step: int | None = None):
    """A decision waits (for `step`, when given): the decision bar offers it."""
    def cond() -> bool:
        request = app.view.decision
        return request is not None and (step is None or request.step == step)
    return cond


def finished(app):
    return lambda: app.view.engine_state == "finished"
