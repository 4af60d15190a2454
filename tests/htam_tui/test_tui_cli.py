"""`htam [PROBLEM] [options]`: bad input exits 2 with one line before any screen opens."""

from __future__ import annotations

from htam_engine.cli import build_app_parser, main
from htam_engine.cli.app_cmd import APP_POLICY, app_spec
from htam_engine.problems import DEMO_PROBLEM


def test_defaults_are_the_demo_problem_and_asking():
    spec = app_spec(build_app_parser().parse_args([]))
    assert (spec.problem, spec.policy, spec.resume) == (DEMO_PROBLEM, APP_POLICY, None)
    spec = app_spec(build_app_parser().parse_args(["--resume", "x.htam", "--steps", "2"]))
    assert (spec.problem, spec.resume, spec.steps) == (None, "x.htam", 2)


def test_bad_input_exits_2_with_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    assert main(["no_such_problem_anywhere"]) == 2
    assert main(["--steps", "-1"]) == 2
    assert main(["--resume", str(tmp_path / "missing.htam")]) == 2
    assert main(["--policy", "sometimes"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("htam:") for line in err)


def test_bad_ui_config_exits_2(capsys, tmp_path, monkeypatch):
    (tmp_path / "htam.toml").write_text("[ui]\nrefresh_hz = \"fast\"\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path))
    assert main(["--steps", "1"]) == 2
    assert "refresh_hz" in capsys.readouterr().err
