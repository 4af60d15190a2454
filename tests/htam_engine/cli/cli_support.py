"""Helpers for the headless CLI tests: run `htam` in-process or as a child, pointed at a
loopback model server, with sessions and the memory bank in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.htam_engine.loop.loop_support import NO_KERNEL, TRITON_CODE, fenced  # noqa: F401 - shared test data
from tests.htam_engine.loop.loop_support import PROBLEM_PATH as PROBLEM  # noqa: F401

ROOT = Path(__file__).resolve().parents[3]
QUICK = ["--trials", "3", "--no-compile-baseline"]


def model_env(server, tmp_path: Path) -> dict[str, str]:
    """Environment for an htam process that talks to the loopback server."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-cli-test",
        "HTAM_MODEL": server.script.model,
        "HTAM_RETRIES": "1",
        "HTAM_CONFIG": str(tmp_path / "no-config.toml"),
        "HTAM_SESSIONS_DIR": str(tmp_path / "sessions"),
        "HTAM_BANK": str(tmp_path / "bank.htgbank"),
    }


def htam_child(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "htam_engine", *args], env=full, cwd=str(kw.pop("cwd", ROOT)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def htam(args: list[str], env: dict[str, str], timeout: float = 240) -> tuple[int, str, str]:
    proc = htam_child(args, env)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def one_json(stdout: str):
    return json.loads(stdout)
