"""`htam run`: headless sessions, the JSON summary, exit codes, kill -9 and resume."""

from __future__ import annotations

import signal
import time

import pytest
from cli_support import NO_KERNEL, PROBLEM, QUICK, TRITON_CODE, fenced, htam, htam_child, model_env, one_json

from htam_engine.session import load_session
from tests.support.loopback_server import LoopbackServer, Reply


@pytest.fixture
def server():
    with LoopbackServer(default=Reply(fenced(NO_KERNEL)), model="loopback-model") as srv:
        yield srv


def test_run_json_prints_the_session_summary(server, tmp_path, monkeypatch, capsys):
    from htam_engine.cli import main

    for k, v in model_env(server, tmp_path).items():
        monkeypatch.setenv(k, v)
    server.add(Reply(fenced(NO_KERNEL)), Reply(fenced(TRITON_CODE)))
    session = tmp_path / "one.htam"
    assert main(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "2",
                 "--session", str(session), "--json", *QUICK]) == 0
    out, err = capsys.readouterr()
    doc = one_json(out)
    assert [s["step"] for s in doc["steps"]] == [1, 2]
    assert doc["steps"][0]["status"] == "rejected" and doc["best"]["status"] == "ok"
    assert doc["best_step"] == 2
    assert "step 2/2" in err  # progress went to standard error, as plain lines
    assert len(load_session(session).steps) == 2
    assert (tmp_path / "bank.htgbank").exists()  # what the session learned went into the bank


def test_plain_output_names_the_best_candidate(server, tmp_path, monkeypatch, capsys):
    from htam_engine.cli import main

    for k, v in model_env(server, tmp_path).items():
        monkeypatch.setenv(k, v)
    assert main(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "1",
                 "--no-bank", *QUICK]) == 0
    out, err = capsys.readouterr()
    assert "no correct candidate in 1 step (" in out and "step 1/1" in err
    assert list((tmp_path / "sessions").glob("*.htam"))
    assert not (tmp_path / "bank.htgbank").exists()


@pytest.mark.parametrize("args", [
    ["run", str(PROBLEM), "--policy", "ask"],
    ["run", "no-such-problem-anywhere"],
    ["run", "--resume", "/nonexistent/session.htam"],
    ["run", str(PROBLEM), "--steps", "-1"],
    ["run"],
])
def test_bad_usage_exits_2_with_one_line(server, tmp_path, monkeypatch, capsys, args):
    from htam_engine.cli import main

    for k, v in model_env(server, tmp_path).items():
        monkeypatch.setenv(k, v)
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_killed_mid_run_then_resumed_has_every_step(server, tmp_path):
    slow = Reply(fenced(NO_KERNEL), delay_s=0.6)
    server.script.default = slow
    session = tmp_path / "killed.htam"
    env = model_env(server, tmp_path)
    proc = htam_child(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "4",
                       "--session", str(session), *QUICK], env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if session.exists() and len(load_session(session).steps) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    kept = len(load_session(session).steps)
    assert 2 <= kept < 4
    code, out, err = htam(["run", "--resume", str(session), "--json"], env)
    assert code == 0, err
    doc = one_json(out)
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4]
