"""The app on the real engine: real memory, sessions and worker pool, with the loopback
model server as the proposer (it replays a Triton candidate, evaluated in a worker with
TRITON_INTERPRET=1, then a module with no kernel), or the offline proposer on the demo problem."""

from __future__ import annotations


import pytest
from loopback_support import MODEL, NO_KERNEL, PROBLEM_PATH, TRITON_CODE, fast_eval, reply
from pilot import SMALL, deciding, finished, wait_for, wait_text
from screen_text import screen_text
from textual.widgets import TextArea

from htam_engine.loop.engine import Engine
from htam_engine.memory import HTG
from htam_engine.propose.config import load_config
from htam_engine.propose.model import ModelProposer
from htam_engine.session import load_session
from htam_engine.session.model import SessionConfig
from htam_tui.app import HtamApp, UiSettings
from htam_tui.screens.memory import MemoryScreen
from htam_tui.screens.sessions import SessionsScreen
from tests.support.loopback_server import LoopbackServer

@pytest.fixture
def server():
    with LoopbackServer(default=reply(NO_KERNEL), model=MODEL) as srv:
        srv.add(reply(TRITON_CODE), reply(NO_KERNEL))
        yield srv


async def test_approve_veto_browse_branch_export_on_the_real_engine(server, tmp_path, monkeypatch):
    from htam_engine.evaluate.pool import WorkerPool
    from htam_engine.problems import load_problem

    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    cfg = load_config({**server.config_overrides(), "retries": 0, "reflect": False},
                      env={"OPENAI_API_KEY": "sk-loop-test"}, user_file=tmp_path / "u.toml",
                      project_file=tmp_path / "p.toml")
    pool = WorkerPool(1, "cpu")
    engine = Engine(load_problem(str(PROBLEM_PATH)), SessionConfig(backend="triton", device="cpu", policy="ask", steps=2),
                    proposer=ModelProposer(cfg.model), pool=pool, htg=HTG.seed(),
                    session_path=tmp_path / "demo.htam", interactive=True, eval_config=fast_eval())
    app = HtamApp(engine, sessions_dir=tmp_path, settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=30)
        await pilot.press("a")
        await wait_for(pilot, deciding(app, 2), timeout=120)
        assert app.view.best_speedup is not None  # step 1 was evaluated: correct, with a speedup
        await pilot.press("v", *"no kernel in it", "enter")
        await wait_for(pilot, finished(app), timeout=30)
        session = load_session(tmp_path / "demo.htam")
        assert [s.candidates[0].decision.action for s in session.steps] == ["approve", "veto"]
        assert session.steps[1].candidates[0].decision.reason == "no kernel in it"
        assert session.best_result is not None and session.best_result.correct
        await wait_text(pilot, "step 2/2")

        await pilot.press("m")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen))
        await wait_text(pilot, "memory_access")
        await pilot.press("escape")

        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        await wait_text(pilot, "1 session(s)")
        await pilot.press("enter")
        await wait_text(pilot, "branch here")
        await pilot.press("E")
        await wait_for(pilot, lambda: any(p.suffix == ".py" for p in tmp_path.rglob("*")) or
                       any("exported" in str(n.message) for n in app._notifications), timeout=10)
        await pilot.press("B")  # branch at the highlighted step 1
        await wait_text(pilot, "2 session(s)")
        branched = [p for p in tmp_path.glob("*.htam") if p.name != "demo.htam"]
        assert len(branched) == 1 and len(load_session(branched[0]).steps) == 1
        await pilot.press("escape")


async def test_offline_proposer_candidate_is_shown_and_vetoed(tmp_path, monkeypatch):
    """The demo problem with the offline proposer: its candidate reaches the approval screen
    (C++ in the kernel view) and a veto goes into the saved session. Nothing is compiled."""
    from htam_engine.evaluate.pool import WorkerPool
    from htam_engine.problems import DEMO_PROBLEM, load_problem
    from htam_engine.propose.offline import OfflineProposer

    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    engine = Engine(load_problem(DEMO_PROBLEM), SessionConfig(backend="cpp", device="cpu", policy="ask", steps=1),
                    proposer=OfflineProposer(), pool=WorkerPool(1, "cpu"), htg=HTG.seed(),
                    session_path=tmp_path / "offline.htam", interactive=True)
    app = HtamApp(engine, sessions_dir=tmp_path, settings=UiSettings(bell=False, refresh_hz=50))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=60)
        assert "class ModelNew" in app.view.decision.code
        await wait_text(pilot, "DECIDE step 1")  # the bar names the direction that produced it
        assert app.view.decision.direction in screen_text(app)
        await pilot.press("v", *"not now", "enter")
        await wait_for(pilot, finished(app), timeout=30)
        session = load_session(tmp_path / "offline.htam")
        assert session.steps[0].candidates[0].decision.reason == "not now"
        await pilot.press("k")
        await wait_text(pilot, "kernel (C++)")
        area = app.query_one("#source", TextArea)
        assert area.language == "cpp" and "torch::Tensor" in area.text  # the load_inline source alone
        await pilot.press("k")
        await wait_text(pilot, "module")
        assert area.language == "python" and "class ModelNew" in area.text


async def test_steering_commands_reach_the_real_engine(tmp_path, monkeypatch):
    """Step budget, forced direction, skip, veto, pause/resume and stop on the real engine
    (offline proposer, demo problem); no candidate is evaluated, so nothing compiles."""
    from htam_engine.evaluate.pool import WorkerPool
    from htam_engine.problems import DEMO_PROBLEM, load_problem
    from htam_engine.propose.offline import OfflineProposer

    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    engine = Engine(load_problem(DEMO_PROBLEM), SessionConfig(backend="cpp", device="cpu", policy="ask", steps=3),
                    proposer=OfflineProposer(), pool=WorkerPool(1, "cpu"), htg=HTG.seed(),
                    session_path=tmp_path / "steer.htam", interactive=True)
    app = HtamApp(engine, sessions_dir=tmp_path, settings=UiSettings(bell=False, refresh_hz=50))

    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, deciding(app, 1), timeout=60)
        await pilot.press("n", "4", "enter")
        await wait_text(pilot, "step 1/4 ")
        assert engine.steps_planned == 4
        await pilot.press("g")
        await wait_text(pilot, "Direction for the next step")
        await pilot.press("end", "enter")
        await wait_for(pilot, lambda: engine._forced is not None)
        forced = engine._forced
        await pilot.press("o", "s")  # skip step 1's candidate on the decision screen
        await wait_for(pilot, deciding(app, 2), timeout=60)
        await pilot.press("p")  # pause: takes effect after this step
        await wait_text(pilot, "[pausing]")
        await pilot.press("v", *"no", "enter")
        await wait_text(pilot, "[paused]", timeout=30)
        assert len(engine.session.steps) == 2
        await pilot.press("p")
        # the next candidate (a step whose strategies have no move for this code brings none to decide)
        await wait_for(pilot, lambda: deciding(app)() and app.view.decision.step >= 3, timeout=60)
        await pilot.press("x")  # stop: the pending candidate becomes a skip
        await wait_for(pilot, finished(app), timeout=30)
        session = load_session(tmp_path / "steer.htam")
        assert session.steps[1].selection.direction == forced and session.steps[1].selection.mode == "forced"
        decided = [c.decision.action for s in session.steps for c in s.candidates[:1] if c.decision is not None]
        assert decided == ["skip", "veto", "skip"]
        assert engine.finish_reason == "stopped"
