"""The device lock: on a GPU it covers everything after compile (checks included), so workers
sharing the GPU never hold their check inputs at once; on the CPU only timing is serialized.

The Runner runs in this process (as inside a worker) on the small problem with the honest
Triton candidate (TRITON_INTERPRET=1); the stage messages record whether the lock was held.
"""

from __future__ import annotations

import fcntl
import gc
import os
import uuid

import pytest

from cheats.harness import restored
from harness_core_support import TRITON_CHAIN, fast_config
from htam_engine.evaluate import runner
from htam_engine.evaluate.cache import cache_dir
from htam_engine.evaluate.result import Status


def _held(name: str) -> bool:
    """Whether another holder has the lock (flock conflicts across open files, even in one process)."""
    path = cache_dir() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return False


def _stages(small_problem, monkeypatch, covers_checks: bool) -> list[tuple[str, bool]]:
    lock = f"time-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HTAM_WORKER_LOCK", lock)
    # The policy a CUDA device gets, applied to the CPU (no GPU here): the lock mechanics are the same.
    monkeypatch.setattr(runner, "lock_covers_checks", lambda device: covers_checks)
    seen: list[tuple[str, bool]] = []

    def send(msg: dict) -> None:
        if msg.get("t") == "stage":
            seen.append((msg["stage"], _held(lock)))

    with restored():
        r = runner.Runner("cpu", send)
        try:
            result, healthy = r.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=3), "triton", "lock-order")
        finally:
            r.guards.uninstall()
    assert result.status is Status.OK and healthy, result.diagnostics.message
    # Nothing of the evaluation outlives it: the models (and the inputs they saw) are gone.
    left = [o for o in gc.get_objects() if type(o).__module__ == "htam_candidate_lock-order"]
    assert left == [], left[:3]
    assert not _held(lock)
    os.unlink(cache_dir() / "locks" / f"{lock}.lock")
    return seen


@pytest.mark.parametrize("covers_checks,expected", [
    (True, [("compile", False), ("wait_lock", False), ("check", True), ("baseline", True), ("time", True)]),
    (False, [("compile", False), ("check", False), ("wait_lock", False), ("baseline", True), ("time", True)]),
])
def test_lock_order_of_stages(small_problem, monkeypatch, covers_checks, expected):
    assert _stages(small_problem, monkeypatch, covers_checks) == expected


def test_only_gpu_devices_lock_their_checks():
    assert runner.lock_covers_checks("cuda") and runner.lock_covers_checks("cuda:1")
    assert not runner.lock_covers_checks("cpu")
