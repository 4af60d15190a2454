"""What the command line says when something is wrong: one line, named once, the right exit code."""

from __future__ import annotations

import json

import pytest

from htam_engine.cli import main


def test_argument_errors_name_the_command_once(capsys):
    assert main(["sessions", "branch", "x.htam"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "htam sessions branch: the following arguments are required: --at"


NO_GPU = pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without a GPU")


@NO_GPU
@pytest.mark.parametrize("args", [
    ["run", "relu", "--device", "cuda"],
    ["run", "relu", "--backend", "cuda"],
    ["run", "relu", "--device", "cuda", "--backend", "triton"],
    ["batch", "builtin", "--device", "cuda:0"],
    ["relu", "--device", "cuda"],  # the app
])
def test_cuda_without_a_gpu_is_refused_before_anything_runs(args, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA GPU is visible on this machine" in err[0]
    assert not list(tmp_path.rglob("*.htam"))  # no session was started


def _session_with_a_veto(path):
    from htam_engine.families import Backend, Bottleneck, Family
    from htam_engine.memory import HTG
    from htam_engine.memory.types import Retrieval, Selection, State
    from htam_engine.problems import load_problem
    from htam_engine.session import new_session, record_step, save_session
    from htam_engine.session.model import Candidate, Decision, SessionConfig, StepRecord

    session = new_session(load_problem("relu"), SessionConfig(steps=1), HTG.seed())
    state = State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", Backend.CPP)
    cand = Candidate(0, "class ModelNew: pass\n", decision=Decision("veto", "person", reason="uses atomics"))
    record_step(session, StepRecord(1, state, Selection("fusion", [], "argmax"), Retrieval("fusion", [], []),
                                    [cand], chosen=0))
    save_session(session, path)
    return path


def test_sessions_show_names_the_veto_reason(tmp_path, capsys):
    path = _session_with_a_veto(tmp_path / "v.htam")
    assert main(["sessions", "show", str(path)]) == 0
    assert "veto by person: uses atomics" in capsys.readouterr().out
    assert main(["sessions", "show", str(path), "--json"]) == 0
    step = json.loads(capsys.readouterr().out)["steps"][0]
    assert (step["status"], step["decision"], step["decision_reason"]) == ("vetoed", "veto", "uses atomics")


def test_files_of_the_wrong_kind_and_options_a_resume_would_ignore(tmp_path, capsys):
    session = _session_with_a_veto(tmp_path / "v.htam")
    cases = [
        (["compare", str(session)], "not an htam results file"),
        (["memory", "show", str(tmp_path / "nosuchbank")], "no such memory bank"),
        (["run", "--resume", str(session), "--backend", "cuda"], "--backend cannot change"),
    ]
    for args, said in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], (args, err)


def test_batch_names_its_proposer_and_why_a_problem_has_no_candidate(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTAM_BASE_URL"):  # no endpoint: the offline proposer
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "out"
    assert main(["batch", "builtin:masked_fill", "--steps", "1", "--out", str(out), "--backend", "triton",
                 "--no-compile-baseline"]) == 0
    err = capsys.readouterr().err
    report = (out / "report.md").read_text()
    assert "proposer=offline" in report and "proposer=None" not in report
    row = json.loads((out / "results.json").read_text())["rows"][0]
    assert row["status"] == "no_candidate" and row["note"]  # the offline proposer's reason
    assert row["note"] in report and f"in 1 step ({row['note']})" in err
