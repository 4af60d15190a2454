"""`htam sessions ...` from the command line: output, one JSON document, exit codes."""

import json

import pytest
from session_builders import build_session

from htam_engine.cli import main
from htam_engine.session import load_session, save_session


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("sessions")
    s, _ = build_session(6, seed=3)
    save_session(s, d / "one.htam")
    (d / "bad.htam").write_bytes(b"\x00\x01")
    return d


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_and_show(capsys, folder):
    code, out, _ = run(capsys, "sessions", "list", str(folder))
    assert code == 0 and "one.htam" in out and "builtin:relu_scale" in out and "unreadable" in out
    code, out, _ = run(capsys, "sessions", "list", str(folder), "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["sessions"]) == 2
    code, out, _ = run(capsys, "sessions", "show", str(folder / "one.htam"))
    assert code == 0 and out.count("\n") >= 8 and "best: step" in out
    code, out, _ = run(capsys, "sessions", "show", str(folder / "one.htam"), "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["steps"]) == 6 and doc["best"]["status"] == "ok" and doc["parent"] is None


def test_list_uses_the_sessions_folder_from_the_environment(capsys, folder, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(folder))
    code, out, _ = run(capsys, "sessions", "list", "--json")
    assert code == 0 and json.loads(out)["dir"] == str(folder)


def test_branch_and_export(capsys, folder, tmp_path):
    code, out, _ = run(capsys, "sessions", "branch", str(folder / "one.htam"), "--at", "2", "--to",
                       str(tmp_path / "b.htam"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["parent"]["step"] == 2 and len(load_session(tmp_path / "b.htam").steps) == 2
    code, out, _ = run(capsys, "sessions", "export", str(folder / "one.htam"), "--to", str(tmp_path / "sol.py"))
    assert code == 0 and "class ModelNew" in (tmp_path / "sol.py").read_text()


@pytest.mark.parametrize("argv,code", [
    (["sessions", "show", "{d}/bad.htam"], 2),
    (["sessions", "show", "{d}/absent.htam"], 2),
    (["sessions", "branch", "{d}/one.htam", "--at", "99"], 2),
    (["sessions", "branch", "{d}/one.htam", "--at", "-1"], 2),
    (["sessions", "branch", "{d}/one.htam"], 2),
    (["sessions", "list", "{d}/one.htam"], 2),
    (["sessions", "frobnicate"], 2),
])
def test_bad_input_is_one_line_with_the_right_exit_code(capsys, folder, argv, code):
    got, out, err = run(capsys, *[a.format(d=folder) for a in argv])
    assert got == code and out == "" and err.count("\n") == 1 and "Traceback" not in err


def test_resume_hands_over_to_the_run_command(capsys, folder, monkeypatch):
    from htam_engine.cli import run_cmd

    seen = {}

    def fake_run(args):  # test double: the real run compiles kernels for minutes
        seen.update(resume=args.resume, steps=args.steps, json=args.json, problem=args.problem)
        return 0

    monkeypatch.setattr(run_cmd, "handle", fake_run)
    assert main(["sessions", "resume", str(folder / "one.htam"), "--steps", "3", "--json"]) == 0
    assert seen == {"resume": str(folder / "one.htam"), "steps": 3, "json": True, "problem": None}


def test_v1_files_are_listed(capsys, tmp_path):
    from v1_writer import write_v1

    write_v1(tmp_path / "old.htam")
    code, out, _ = run(capsys, "sessions", "list", str(tmp_path), "--json")
    row = json.loads(out)["sessions"][0]
    assert code == 0 and (row["session"], row["steps"], row["best_speedup"]) == ("v1-session", 2, 1.5)
