"""The device lock in a worker: on a GPU a slot covers everything after compile and the
checks hold the lock shared (a few workers check at once, none while one times); on the CPU
checks take no lock. Timing holds it exclusively on both.

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
from htam_engine.evaluate import devicelock, runner
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


# Stand-in for a check that met other workers' memory on a shared GPU: the first call fails.
OOM_ONCE = TRITON_CHAIN + """

_calls = [0]
_Fused = ModelNew


class ModelNew(_Fused):
    def forward(self, *args):
        _calls[0] += 1
        if _calls[0] == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (stand-in)")
        return super().forward(*args)
"""


def _stages(small_problem, monkeypatch, slots: int, code: str = TRITON_CHAIN,
            status: Status = Status.OK) -> list[tuple[str, bool]]:
    lock = f"time-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HTAM_WORKER_LOCK", lock)
    # The policy a CUDA device gets, applied to the CPU (no GPU here): the lock mechanics are the same.
    monkeypatch.setattr(devicelock, "check_slots", lambda device: slots)
    seen: list[tuple[str, bool]] = []

    def send(msg: dict) -> None:
        if msg.get("t") == "stage":
            seen.append((msg["stage"], _held(lock)))

    with restored():
        r = runner.Runner("cpu", send)
        try:
            result, healthy = r.evaluate(small_problem, code, fast_config(trials=3), "triton", "lock-order")
        finally:
            r.guards.uninstall()
    assert result.status is status, result.diagnostics.message
    assert healthy == (status is Status.OK)
    # Nothing of the evaluation outlives it: the models (and the inputs they saw) are gone.
    left = [o for o in gc.get_objects() if type(o).__module__ == "htam_candidate_lock-order"]
    assert left == [], left[:3]
    assert not _held(lock) and not any(_held(f"{lock}-slot{i}") for i in range(slots))
    for path in (cache_dir() / "locks").glob(f"{lock}*.lock"):
        os.unlink(path)
    return seen


@pytest.mark.parametrize("slots,expected", [
    # a GPU: wait for a slot, check holding the lock shared, wait again, time holding it alone
    (1, [("compile", False), ("wait_lock", False), ("check", True), ("wait_lock", False), ("baseline", True),
         ("time", True)]),
    (3, [("compile", False), ("wait_lock", False), ("check", True), ("wait_lock", False), ("baseline", True),
         ("time", True)]),
    # the CPU: checks run unlocked
    (0, [("compile", False), ("check", False), ("wait_lock", False), ("baseline", True), ("time", True)]),
])
def test_lock_order_of_stages(small_problem, monkeypatch, slots, expected):
    assert _stages(small_problem, monkeypatch, slots) == expected


def test_check_out_of_memory_beside_other_checkers_is_checked_again_alone(small_problem, monkeypatch):
    assert _stages(small_problem, monkeypatch, 2, OOM_ONCE) == [
        ("compile", False), ("wait_lock", False), ("check", True), ("wait_lock", False), ("check", True),
        ("wait_lock", False), ("baseline", True), ("time", True)]


def test_check_out_of_memory_with_the_device_alone_is_a_runtime_error(small_problem, monkeypatch):
    stages = _stages(small_problem, monkeypatch, 1, OOM_ONCE, Status.RUNTIME_ERROR)
    assert [s for s, _ in stages].count("check") == 1


def test_gpu_devices_get_check_slots_by_memory(monkeypatch):
    monkeypatch.delenv(devicelock.SLOTS_ENV, raising=False)
    assert devicelock.check_slots("cpu") == 0
    monkeypatch.setenv(devicelock.SLOTS_ENV, "2")
    assert devicelock.check_slots("cuda") == 2 and devicelock.check_slots("cuda:1") == 2
    monkeypatch.delenv(devicelock.SLOTS_ENV)
    import torch

    for gib, slots in [(141, 4), (80, 2), (40, 1), (24, 1), (512, 4)]:  # H200, H100, A100-40, L4, capped
        props = type("Props", (), {"total_memory": gib << 30})()
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device, p=props: p)
        assert devicelock.check_slots("cuda") == slots, gib
