"""What the command line says when something is wrong: one line, named once, the right exit code."""

from __future__ import annotations

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
