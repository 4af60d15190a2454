"""One factory picks the proposer: model when an endpoint is configured, offline otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from htam_engine.errors import UsageError
from htam_engine.propose import default_kind, load_config, make_proposer
from htam_engine.propose.model import ModelProposer

ROOT = Path(__file__).resolve().parents[3]


def _config(tmp_path, env):
    return load_config(env=env, user_file=tmp_path / "u.toml", project_file=tmp_path / "p.toml")


def test_default_kind_follows_the_endpoint(tmp_path):
    assert default_kind(_config(tmp_path, {})) == "offline"
    assert default_kind(_config(tmp_path, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})) == "model"


def test_model_kind_builds_a_model_proposer(tmp_path):
    proposer = make_proposer("model", _config(tmp_path, {"HTAM_BASE_URL": "http://127.0.0.1:9/v1", "HTAM_MODEL": "qwen"}))
    assert isinstance(proposer, ModelProposer) and proposer.name == "model"
    assert proposer.settings.model == "qwen"


def test_model_kind_without_an_endpoint_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="needs an endpoint"):
        make_proposer("model", _config(tmp_path, {}))
    with pytest.raises(UsageError, match="unknown proposer 'gpt'"):
        make_proposer("gpt", _config(tmp_path, {}))


def test_offline_kind_is_imported_lazily(tmp_path):
    offline = pytest.importorskip("htam_engine.propose.offline")
    if not hasattr(offline, "OfflineProposer"):
        pytest.skip("the offline proposer is not exported yet")
    assert make_proposer(None, _config(tmp_path, {})).name == "offline"


def test_server_runs_as_a_script_and_stops_by_itself(tmp_path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps({"model": "scripted", "replies": [{"content": "hello"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.loopback_server", "--script", str(script), "--lifetime", "3"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        base = line.split()[-1]
        models = json.load(urllib.request.urlopen(base + "/models", timeout=5))
        assert models["data"][0]["id"] == "scripted"
        body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}).encode()
        req = urllib.request.Request(base + "/chat/completions", body, {"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(req, timeout=5))
        assert reply["choices"][0]["message"]["content"] == "hello"
        assert proc.wait(timeout=10) == 0  # bounded: gone after its lifetime
    finally:
        if proc.poll() is None:
            proc.kill()


def test_server_script_mode_serves_candidate_files(tmp_path):
    from tests.support.loopback_server import main  # in-process: same code path, no second interpreter

    candidate = tmp_path / "cand.py"
    candidate.write_text("class ModelNew:\n    pass\n")
    assert main(["--script", str(tmp_path / "missing.json")]) == 2
    with pytest.raises(SystemExit):
        main([])
    from tests.support.loopback_server import _file_reply

    assert _file_reply(str(candidate)).content.endswith("```python\nclass ModelNew:\n    pass\n```\n")
