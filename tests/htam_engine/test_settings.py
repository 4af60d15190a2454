"""Settings in one place: the list, its layering (user file, project file, environment, flag),
the README's table, and refusing a typo in a config file."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from htam_engine import settings
from htam_engine.cli import main
from htam_engine.errors import InputError
from htam_engine.propose.config import ModelSettings

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_the_settings_list():
    assert settings.markdown_table() in (ROOT / "README.md").read_text()


def test_every_htam_variable_the_code_reads_is_listed():
    named = set()
    for path in (ROOT / "htam_engine").rglob("*.py"):
        # quoted names, as the code reads them (a placeholder like "@HTAM_PREFIX@" is not one)
        named |= set(re.findall(r"[\"'`](HTAM_[A-Z_]+)\b", path.read_text()))
    listed = {s.env for s in settings.SETTINGS} | set(settings.INTERNAL_ENV) | set(settings.DIAGNOSTIC_ENV)
    assert named - listed == set()


def test_model_defaults_are_the_model_settings_defaults():
    fields = {f.name: f.default for f in dataclasses.fields(ModelSettings)}
    for s in settings.SETTINGS:
        if s.table == "model":
            assert fields[s.key] == s.default, s.key


def test_user_file_then_project_file_then_environment_then_flag(tmp_path, monkeypatch, capsys):
    user, project = tmp_path / "user.toml", tmp_path / "work" / "htam.toml"
    project.parent.mkdir()
    monkeypatch.chdir(project.parent)
    monkeypatch.setenv("HTAM_CONFIG", str(user))
    monkeypatch.delenv("HTAM_SESSIONS_DIR", raising=False)
    assert settings.value("sessions_dir") == "sessions"
    user.write_text('[paths]\nsessions_dir = "from-user"\n[evaluate]\npch = false\n')
    assert settings.value("sessions_dir") == "from-user" and settings.pch_enabled() is False
    project.write_text('[paths]\nsessions_dir = "from-project"\n')
    assert settings.value("sessions_dir") == "from-project"
    (project.parent / "from-project").mkdir()
    assert main(["sessions", "list", "--json"]) == 0  # the command reads the same value
    assert json.loads(capsys.readouterr().out)["dir"] == str(Path("from-project"))
    monkeypatch.setenv("HTAM_SESSIONS_DIR", "from-env")
    assert settings.value("sessions_dir") == "from-env"
    assert settings.value("sessions_dir", flag="from-flag") == "from-flag"
    assert settings.environment()["HTAM_PCH"] == "0"  # what workers are given


def test_a_typo_in_a_config_file_exits_2_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "htam.toml").write_text("[evaluate]\npch_afterr = 3\n")
    assert main(["sessions", "list", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "htam.toml" in err and "pch_afterr" in err
    (tmp_path / "htam.toml").write_text("[evaluate]\ngpu_check_slots = \"many\"\n")
    with pytest.raises(InputError, match="gpu_check_slots must be int"):
        settings.check()
