"""The run's states as the app shows them, on the real engine (loopback model server; its
replies are modules with no kernel, rejected by the static checks, so nothing compiles):
the step budget prompt, pausing and raising the budget after the finish, what a skip and a
stop are recorded as, and a resumed or branched session that shows its history."""

from __future__ import annotations

from pilot import SMALL, deciding, finished, wait_for, wait_text
from real_engine import app_on, engine, resumed, resumer, server  # noqa: F401 - the server fixture
from screen_text import screen_text
from session_files import write_session
from textual.widgets import TextArea

from htam_engine.session import branch_session, load_session, summarize


def reported(app, text):
    return lambda: any(text in m for m in app.view.messages)


async def test_budget_prompt_pause_and_more_steps_after_the_finish(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    e = engine(server, tmp_path, steps=2)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("n", "minus", "enter")  # not a number: said, and the app goes on
        await wait_for(pilot, reported(app, "whole number"))
        await pilot.press("s")
        await wait_for(pilot, deciding(app, 2), timeout=30)
        await pilot.press("n", "1", "enter")  # below the step under way: refused
        await wait_for(pilot, reported(app, "at least 2"))
        assert e.steps_planned == 2 and "step 2/2" in screen_text(app)
        await pilot.press("x")  # stop with the decision pending
        await wait_for(pilot, finished(app), timeout=30)
        steps = summarize(load_session(tmp_path / "run.htam"))["steps"]
        assert [(s["status"], s["decision"], s["decided_by"]) for s in steps] == [
            ("skipped", "skip", "person"), ("stopped", "skip", "stop")]

    e = engine(server, tmp_path, steps=1, session=str(tmp_path / "more.htam"))
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("a")
        await wait_for(pilot, finished(app), timeout=30)
        await pilot.press("p")  # nothing to pause: said, and the state stays
        await wait_for(pilot, reported(app, "nothing to pause"))
        await wait_text(pilot, "[finished] step 1/1")
        await pilot.press("n", "2", "enter")  # a larger budget runs another step
        await wait_for(pilot, deciding(app, 2), timeout=30)
        await wait_text(pilot, "step 2/2")
        await pilot.press("a")
        await wait_for(pilot, lambda: len(e.session.steps) == 2 and app.view.engine_state == "finished", timeout=30)


async def test_a_resumed_session_shows_its_history_and_a_branch_its_best(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    path = write_session(tmp_path / "done.htam", [1.25, None, 1.5])
    session = load_session(path)
    app = app_on(resumed(server, tmp_path, path), tmp_path, engine_factory=resumer(server, tmp_path))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, finished(app), timeout=30)
        await wait_text(pilot, "[finished] step 3/3 best 1.50x")
        text = screen_text(app)
        assert session.steps[-1].selection.direction in text  # the direction pane: the last step's
        assert "no steps yet" not in text and "no strategies retrieved yet" not in text
        assert app.query_one("#source", TextArea).text == session.best_code  # the source: its best
        assert app.view.step_speedups == [1.25, None, 1.5]
        await pilot.press("n", "4", "enter")  # more steps on a finished session run
        await wait_for(pilot, lambda: len(app.engine.session.steps) == 4, timeout=30)

        branch = branch_session(path, 1)
        await pilot.press("b")
        await wait_text(pilot, branch.name)
        await pilot.press("down")  # the branch is the newest: second row after the original's change
        await wait_for(pilot, lambda: app.screen.selected_path() is not None)
        if app.screen.selected_path() != branch:
            await pilot.press("up")
        await pilot.press("R")
        await wait_for(pilot, lambda: app.engine.session_path == branch, timeout=30)
        await wait_text(pilot, "best 1.25x")  # the branch's step 1, as the browser listed it
        assert app.view.step_speedups[0] == 1.25
