"""The real engine for pilot tests: built by `htam_engine.loop.setup.open_engine` (as `htam`
builds it) with the loopback model server as the proposer and its own one-worker pool, which
the app closes when the run ends. Candidates the tests approve are evaluated for real in a
worker (Triton with TRITON_INTERPRET=1, quick settings)."""

from __future__ import annotations

from pathlib import Path

import pytest
from loopback_support import MODEL, NO_KERNEL, PROBLEM_PATH, fast_eval, reply

from htam_engine.loop.engine import Engine
from htam_engine.loop.setup import RunSpec, open_engine, resume_spec
from htam_engine.propose.config import load_config
from htam_engine.propose.model import ModelProposer
from htam_tui.app import HtamApp, UiSettings
from tests.support.loopback_server import LoopbackServer


@pytest.fixture
def server():
    """The loopback model server (import this fixture into a test module). Replies a test adds
    are served in order; after them, a module with no kernel (rejected by the static checks at
    once, nothing compiled)."""
    with LoopbackServer(default=reply(NO_KERNEL), model=MODEL) as srv:
        yield srv


def proposer(server, folder: Path) -> ModelProposer:
    """A model proposer on the loopback server: no retries, no reflection call (one reply per
    candidate), and no user or project config file read."""
    cfg = load_config({**server.config_overrides(), "retries": 0, "reflect": False},
                      env={"OPENAI_API_KEY": "sk-loop-test"}, user_file=folder / "none-user.toml",
                      project_file=folder / "none-project.toml")
    return ModelProposer(cfg.model)


def spec(folder: Path, **kw) -> RunSpec:
    base = dict(problem=str(PROBLEM_PATH), backend="triton", device="cpu", policy="ask", steps=1,
                session=str(folder / "run.htam"), bank="", workers=1, proposer="model")
    return RunSpec(**{**base, **kw})


def engine(server, folder: Path, *, hold_open: bool = True, **kw) -> Engine:
    """As `htam` builds it for the app: interactive, and held open when its budget is spent."""
    e = open_engine(spec(folder, **kw), interactive=True, proposer=proposer(server, folder), hold_open=hold_open)
    e.eval_config = fast_eval()
    return e


def resumed(server, folder: Path, path: Path, steps: int | None = None) -> Engine:
    """`htam --resume path` on the loopback server."""
    e = open_engine(resume_spec(path, RunSpec(bank="", workers=1), steps), interactive=True,
                    proposer=proposer(server, folder), hold_open=True)
    e.eval_config = fast_eval()
    return e


def resumer(server, folder: Path, steps: int | None = None):
    """The app's engine factory for a resumed session: `steps` more steps on the same server."""
    return lambda path: resumed(server, folder, Path(path), steps)


def app_on(engine_, folder: Path, **kw) -> HtamApp:
    kw.setdefault("settings", UiSettings(bell=False, refresh_hz=50))
    return HtamApp(engine_, sessions_dir=folder, **kw)
