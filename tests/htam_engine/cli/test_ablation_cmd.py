"""`--ablation random` on `htam run` and `htam batch`: accepted, applied and recorded."""

from __future__ import annotations

import json

import pytest
from cli_support import NO_KERNEL, PROBLEM, QUICK, fenced, model_env, one_json

from htam_engine.memory import HTG
from htam_engine.memory.select import applicable_directions
from htam_engine.session import load_session
from tests.support.loopback_server import LoopbackServer, Reply


@pytest.fixture
def env(tmp_path, monkeypatch):
    # every reply is a module without a kernel: rejected statically, nothing is compiled
    with LoopbackServer(default=Reply(fenced(NO_KERNEL)), model="loopback-model") as srv:
        for k, v in model_env(srv, tmp_path).items():
            monkeypatch.setenv(k, v)
        yield srv


def test_run_with_the_random_arm_records_it_in_the_session_and_its_summary(env, tmp_path, capsys):
    from htam_engine.cli import main

    session = tmp_path / "random.htam"
    assert main(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "4", "--seed", "3",
                 "--ablation", "random", "--session", str(session), "--no-bank", "--json", *QUICK]) == 0
    doc = one_json(capsys.readouterr().out)
    assert doc["config"]["ablation"] == "random"
    assert [s["selection_mode"] for s in doc["steps"]] == ["random"] * 4
    saved = load_session(session)
    assert saved.config.ablation == "random"
    for rec in saved.steps:  # each draw came from the directions that applied in its state
        assert rec.selection.direction in applicable_directions(HTG.seed(), rec.state)


def test_batch_with_the_random_arm_records_it_in_the_results(env, tmp_path, capsys):
    from htam_engine.cli import main

    out = tmp_path / "out"
    assert main(["batch", "builtin:relu", "builtin:softmax", "--proposer", "model", "--backend", "triton",
                 "--steps", "2", "--ablation", "random", "--out", str(out), "--json", *QUICK]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["ablation"] == "random"
    assert json.loads((out / "results.json").read_text())["settings"]["ablation"] == "random"
    sessions = sorted((out / "sessions").glob("*.htam"))
    assert len(sessions) == 2
    for path in sessions:
        s = load_session(path)
        assert s.config.ablation == "random" and {r.selection.mode for r in s.steps} == {"random"}


def test_an_unknown_arm_is_bad_usage(env, capsys):
    from htam_engine.cli import main

    assert main(["run", str(PROBLEM), "--ablation", "sideways"]) == 2
    err = capsys.readouterr().err
    assert "sideways" in err and "Traceback" not in err
