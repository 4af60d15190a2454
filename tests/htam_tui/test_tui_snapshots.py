"""Snapshot tests (pytest-textual-snapshot) of the main screen, approval prompt, session
browser and memory browser at 80x24 and 160x48, from fixed data (scripted engine, seed
memory, session files saved with a frozen clock)."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_double import CODE_V1, ScriptedEngine, _retrieval, _selection, ok_result
from pilot import wait_for

from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory import HTG
from htam_engine.memory.types import State
from htam_engine.session import new_session, save_session
from htam_engine.session.model import Candidate, Decision, SessionConfig, StepRecord
from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.approval import ApprovalScreen

SIZES = [(80, 24), (160, 48)]
FROZEN = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def settings() -> UiSettings:
    return UiSettings(bell=False, refresh_hz=50)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
def test_main_screen(snap_compare, size):
    engine = ScriptedEngine(steps=3, policy="auto")
    app = HtamApp(engine, settings=settings())

    async def run_before(pilot):
        await wait_for(pilot, lambda: app.view.engine_state == "finished")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
def test_approval(snap_compare, size):
    engine = ScriptedEngine(steps=1, policy="ask")
    app = HtamApp(engine, settings=settings())

    async def run_before(pilot):
        await wait_for(pilot, lambda: app.view.decision is not None)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def _session_files(folder: Path, monkeypatch) -> None:
    from htam_engine.problems import load_problem

    problem = load_problem(str(Path(__file__).parent / "data" / "double_relu.py"))
    monkeypatch.setattr("htam_engine.session.store.time.time", lambda: FROZEN)
    monkeypatch.setattr("htam_engine.session.ops.time.time", lambda: FROZEN, raising=False)
    state = State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", Backend.CPP)
    for name, steps in (("a-run", 2), ("b-run", 0)):
        session = new_session(problem, SessionConfig(steps=3), HTG.seed())
        session.id = name
        for k in range(1, steps + 1):
            cand = Candidate(0, CODE_V1, decision=Decision("approve", "person"), result=ok_result(1.0 + k / 4))
            session.steps.append(StepRecord(k, state, _selection(k), _retrieval(_selection(k).direction), [cand],
                                            chosen=0, reward=0.2, best_speedup=1.0 + k / 4))
        save_session(session, folder / f"{name}.htam")
    monkeypatch.undo()


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
def test_session_browser(snap_compare, size, tmp_path, monkeypatch):
    _session_files(tmp_path, monkeypatch)
    app = HtamApp(None, sessions_dir=tmp_path, settings=settings())

    async def run_before(pilot):
        await pilot.press("b")
        await pilot.pause()
        await pilot.press("enter")  # a-run: the first row (equal times keep name order), 2 steps
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def fixed_memory() -> HTG:
    """A small memory of its own, so the picture does not follow edits of the shipped seed."""
    htg = HTG()
    for d, title in (("memory_access", "Memory access"), ("vectorization", "Vectorization"), ("fusion", "Operator fusion")):
        htg.add_direction(d, title, f"{title}: what the direction is about.", {})
        for k in range(3):
            htg.add_strategy(d, f"{title} strategy {k}", f"Do thing {k} for {d}.", pitfalls="mind the tail",
                             template="ew_fused_vec4" if k == 0 else None, source="seed", id=f"{d}/s{k}")
    htg.add_transition("memory_access", "vectorization", "slower|elementwise|memory|0.5-1", 3, 2, 0.6, 0.2)
    htg.add_note("memory_access", "vectorization", {"when": "after coalescing", "why": "fewer instructions",
                                                    "risk": "alignment", "source": "prior"})
    return htg


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
def test_memory_browser(snap_compare, size):
    app = HtamApp(None, htg=fixed_memory(), settings=settings())

    async def run_before(pilot):
        await pilot.press("m")
        await pilot.pause()
        await pilot.press("enter", "down")  # expand memory_access, highlight its first strategy
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
