"""A long headless session, measured: `htam run` against the loopback server for N steps,
with the resident size of the htam process (and its workers) sampled at chosen steps and
the temporary folder compared before and after. Used by the CI variant
(test_fault_hygiene.py) and by tests/bench/soak_500.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from fault_support import HONEST, NO_KERNEL, PROBLEM, ROOT, fenced

_DONE = re.compile(r"^\s*step (\d+) done")


@dataclass
class SoakResult:
    steps_done: int
    exit_code: int
    wall_s: float
    rss_mb: dict[int, float] = field(default_factory=dict)  # step -> the htam process
    worker_rss_mb: dict[int, float] = field(default_factory=dict)  # step -> its workers together
    tmp_before: list[str] = field(default_factory=list)
    tmp_after: list[str] = field(default_factory=list)
    session_dir_after: list[str] = field(default_factory=list)
    stderr_tail: str = ""
    leftover_pids: list[int] = field(default_factory=list)


def _rss_mb(p: psutil.Process) -> float:
    try:
        return p.memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


def soak(steps: int, workdir: Path, checkpoints: tuple[int, ...], real_every: int = 3,
         extra_env: dict[str, str] | None = None) -> SoakResult:
    """Run the session; every `real_every`-th reply is the honest candidate (a real, cached
    evaluation in a worker), the others are judged by the static checks alone."""
    from tests.support.loopback_server import LoopbackServer, Reply

    tmp = workdir / "tmpdir"
    tmp.mkdir(parents=True, exist_ok=True)
    sessions = workdir / "sessions"
    replies = [Reply(fenced(HONEST)) if (i % real_every == 0) else Reply(fenced(NO_KERNEL)) for i in range(steps + 5)]
    with LoopbackServer(replies, default=Reply(fenced(NO_KERNEL)), lifetime_s=3600) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-soak", "HTAM_MODEL": "loopback-model", "HTAM_CONFIG": str(workdir / "none.toml"),
               "HTAM_SESSIONS_DIR": str(sessions), "HTAM_BANK": str(sessions / "memory.htgbank"), **(extra_env or {})}
        before = sorted(os.listdir(tmp))
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "htam_engine", "run", str(PROBLEM), "--proposer", "model", "--backend", "triton",
             "--steps", str(steps), "--session", str(sessions / "soak.htam"), "--trials", "1", "--no-compile-baseline"],
            env=env, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        me = psutil.Process(proc.pid)
        result = SoakResult(0, -1, 0.0, tmp_before=before)
        tail: list[str] = []
        family: set[int] = set()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                tail.append(line)
                del tail[:-40]
                m = _DONE.match(line)
                if not m:
                    continue
                n = int(m.group(1))
                result.steps_done = max(result.steps_done, n)
                if n in checkpoints:
                    result.rss_mb[n] = _rss_mb(me)
                    try:
                        kids = me.children(recursive=True)
                    except psutil.Error:
                        kids = []
                    family.update(k.pid for k in kids)
                    result.worker_rss_mb[n] = sum(_rss_mb(k) for k in kids)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        result.exit_code = proc.wait()
        reader.join(timeout=10)
        result.wall_s = time.monotonic() - t0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in family):
        time.sleep(0.1)
    result.leftover_pids = [p for p in family if psutil.pid_exists(p)]
    result.tmp_after = sorted(os.listdir(tmp))
    result.session_dir_after = sorted(os.listdir(sessions)) if sessions.is_dir() else []
    result.stderr_tail = "".join(tail)
    return result
