"""Fixtures for the engine tests (helpers live in loop_support.py)."""

from __future__ import annotations

import pytest
from loop_support import MODEL, NO_KERNEL, PRICE, PROBLEM_PATH, RecordingProposer, reply

from htam_engine.propose.config import load_config
from htam_engine.propose.model import ModelProposer
from tests.support.loopback_server import LoopbackServer


@pytest.fixture
def server():
    with LoopbackServer(default=reply(NO_KERNEL), model=MODEL) as srv:
        yield srv


@pytest.fixture
def model_proposer(server, tmp_path):
    cfg = load_config({**server.config_overrides(), "retries": 1, "timeout_s": 20.0, "reflect": False},
                      env={"OPENAI_API_KEY": "sk-loop-test"}, user_file=tmp_path / "u.toml",
                      project_file=tmp_path / "p.toml")
    cfg.model.backoff_base_s = 0.01
    cfg.model.prices = {MODEL: PRICE}
    return RecordingProposer(ModelProposer(cfg.model))


@pytest.fixture
def problem():
    from htam_engine.problems import load_problem

    return load_problem(str(PROBLEM_PATH))


@pytest.fixture
async def pool():
    from htam_engine.evaluate.pool import WorkerPool

    p = WorkerPool(1, "cpu")
    yield p
    await p.close()
