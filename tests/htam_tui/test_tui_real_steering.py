"""Steering actions on the real engine (open_engine, loopback model server, real worker pool):
edit in $EDITOR, approve-all, the bell and the pending queue, the diff of a candidate (approval
and main screen), re-evaluating the best, the error jump, quit, a failed command, and resume from the session browser. Each test
asserts on the engine's session (steps, decisions, policy, results) and on the screen."""

from __future__ import annotations

import stat

import pytest
from loopback_support import TRITON_CODE, reply
from pilot import SMALL, deciding, finished, wait_for, wait_text
from real_engine import app_on, engine, resumer, server  # noqa: F401 - the server fixture
from screen_text import screen_text
from textual.widgets import TextArea

from htam_engine.session import load_session
from htam_tui.app import UiSettings
from htam_tui.screens.sessions import SessionsScreen

# A Triton candidate that fails at import (module line 5): the harness's compile error names the line.
BAD_IMPORT = TRITON_CODE.replace("import triton.language as tl\n", "import triton.language as tl\nWIDTH = int(\"wide\")\n")


@pytest.fixture(autouse=True)
def sessions_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))


def decisions(session):
    return [(c.decision.action, c.decision.by) for s in session.steps for c in s.candidates if c.decision]


async def test_edit_in_editor_evaluates_the_edited_code(server, tmp_path, monkeypatch):
    server.add(reply(TRITON_CODE))
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/256/128/g' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    e = engine(server, tmp_path)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("e")
        await wait_for(pilot, finished(app), timeout=120)
        cand = e.session.steps[0].candidates[0]
        assert cand.decision.action == "edit" and "BLOCK=128" in cand.decision.edited_code
        assert cand.result.correct  # the edited module was the one evaluated
        assert "BLOCK=128" in e.session.best_code and "BLOCK=256" not in e.session.best_code
        assert "BLOCK=128" in app.query_one("#source", TextArea).text
        await wait_text(pilot, "step 1/1")
    assert load_session(tmp_path / "run.htam").steps[0].candidates[0].decision.action == "edit"


async def test_approve_all_switches_the_engines_policy(server, tmp_path):
    e = engine(server, tmp_path, steps=3)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("A")
        await wait_for(pilot, finished(app), timeout=60)
        assert e.policy == "auto" and e.session.config.policy == "auto"
        assert decisions(e.session) == [("approve", "person"), ("approve", "auto"), ("approve", "auto")]
        assert all(s.candidates[0].result is not None for s in e.session.steps)  # all were evaluated
        await wait_text(pilot, "policy auto")


async def test_bell_and_queue_of_pending_decisions(server, tmp_path):
    """Two samples in one step ask at once: the status line counts both, each gets its prompt."""
    e = engine(server, tmp_path, samples=2)
    app = app_on(e, tmp_path, settings=UiSettings(refresh_hz=50))
    bells = []
    app.bell = lambda: bells.append(1)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: len(app.view.pending) == 2, timeout=30)
        await wait_text(pilot, "PENDING 2")
        assert bells and sorted(r.sample for r in e.pending.open()) == [0, 1]
        await pilot.press("o", "escape")  # the decision screen, then decide later: both stay queued
        assert len(e.pending.open()) == 2
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.view.pending) == 1)
        await pilot.press("v", *"one is enough", "enter")
        await wait_for(pilot, finished(app), timeout=60)
        assert sorted(a for a, _ in decisions(e.session)) == ["approve", "veto"]
        assert "PENDING" not in screen_text(app)


async def test_diff_reevaluate_best_and_error_jump(server, tmp_path):
    server.add(reply(TRITON_CODE), reply(BAD_IMPORT))
    e = engine(server, tmp_path, steps=2)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("a")
        await wait_for(pilot, deciding(app, 2), timeout=120)
        await wait_text(pilot, "ok ")  # step 1's result in the timings pane: times in ms, stage seconds
        shown = screen_text(app)
        result = e.session.steps[0].candidates[0].result
        assert f"ok {result.runtime_ms:.4g} · eager {result.ref_runtime_ms:.4g} ms" in shown
        assert f"check {result.stages.check_s:.1f}s" in shown
        await pilot.press("o", "d")  # the candidate against the engine's best (step 1's)
        await wait_text(pilot, "+++ candidate")
        assert '+WIDTH = int("wide")' in screen_text(app)
        await pilot.press("escape", "r")  # re-time the best while step 2 waits
        await wait_for(pilot, lambda: app.view.stage == "ok" and len(app.view.trial_timings) == 3, timeout=60)
        assert len(e.session.steps) == 1  # a re-evaluation is not a step
        await pilot.press("a")
        await wait_for(pilot, finished(app), timeout=60)
        assert e.session.steps[1].candidates[0].result.status.value == "compile_error"
        await wait_text(pilot, "ValueError")
        await pilot.press("d")  # the main screen's diff: step 2's candidate against the best
        await wait_text(pilot, "diff vs previous best")
        assert '+WIDTH = int("wide")' in screen_text(app)
        await pilot.press("d")
        await pilot.press("4", "enter")  # the error's line in the source pane
        area = app.query_one("#source", TextArea)
        await wait_for(pilot, lambda: area.has_focus and area.cursor_location[0] == 4)
        assert area.document.get_line(4) == 'WIDTH = int("wide")'


async def test_quit_skips_the_pending_candidate_and_saves(server, tmp_path):
    e = engine(server, tmp_path, steps=3)
    app = app_on(e, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await app.command(e.choose_direction, "no_such_direction")  # a failing command is reported
        assert any("unknown direction" in m for m in app.view.messages)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=30)
    assert e.finish_reason == "stopped"
    saved = load_session(tmp_path / "run.htam")
    assert [c.decision.by for s in saved.steps for c in s.candidates] == ["stop"]


async def test_resume_from_the_session_browser(server, tmp_path):
    e = engine(server, tmp_path, policy="auto")
    app = app_on(e, tmp_path, engine_factory=resumer(server, tmp_path, steps=1))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, finished(app), timeout=60)
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        await wait_text(pilot, "1 session(s)")
        await pilot.press("R")
        await wait_for(pilot, lambda: app.engine is not e, timeout=30)
        await wait_for(pilot, finished(app), timeout=60)
        await wait_text(pilot, "step 2/2")
    assert len(load_session(tmp_path / "run.htam").steps) == 2
