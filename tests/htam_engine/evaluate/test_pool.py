"""The asyncio worker pool: parallel evaluations, progress on the loop's thread, cancel, close."""

from __future__ import annotations

import asyncio
import threading

import psutil
import pytest
from harness_core_support import fast_config, triton_variant

from htam_engine.evaluate.pool import WorkerPool, slot_devices
from htam_engine.evaluate.result import Status


async def test_two_candidates_evaluate_in_parallel_with_progress(small_problem):
    seen: dict[int, list[str]] = {0: [], 1: []}
    loop_thread = threading.get_ident()
    trial_counts: list[int] = []

    def recorder(i: int):
        def on_progress(stage: str, timings: list[float]) -> None:
            assert threading.get_ident() == loop_thread  # callbacks never arrive on a worker thread
            seen[i].append(stage)
            if stage == "time":
                trial_counts.append(len(timings))
        return on_progress

    async with WorkerPool(size=2, device="cpu") as pool:
        await pool.warm(fast_config())
        assert all(s.worker_pid for s in pool._slots)  # both workers up before any candidate
        results = await asyncio.gather(
            pool.evaluate(small_problem, triton_variant(), fast_config(), on_progress=recorder(0)),
            pool.evaluate(small_problem, triton_variant("y = y + 0.0"), fast_config(), on_progress=recorder(1)),
        )
        pids = {s.worker_pid for s in pool._slots}
    assert [r.status for r in results] == [Status.OK, Status.OK], [r.diagnostics.message for r in results]
    assert len(pids) == 2  # two worker processes served them
    for stages in seen.values():
        assert stages[0] == "static" and stages[-1] == "done"
        assert {"compile", "check", "time"} <= set(stages)
    assert trial_counts and max(trial_counts) == 5
    for pid in pids:  # close() leaves nothing running
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_cancelling_an_evaluation_kills_its_worker(small_problem):
    pool = WorkerPool(size=1, device="cpu")
    try:
        hang = triton_variant("time.sleep(1000)", header="import time")
        task = asyncio.create_task(pool.evaluate(small_problem, hang, fast_config(timeout_s=600)))
        slot = pool._slots[0]
        for _ in range(600):  # wait until the worker is running the candidate
            await asyncio.sleep(0.1)
            if slot.worker_pid:
                break
        pid = slot.worker_pid
        await asyncio.sleep(1.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert pid and (not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
        after = await pool.evaluate(small_problem, triton_variant(), fast_config())
        assert after.status is Status.OK
    finally:
        await pool.close()


def test_slots_spread_over_gpus_only_for_bare_cuda(monkeypatch):
    import htam_engine.evaluate.pool as pool_mod

    monkeypatch.setattr(pool_mod, "visible_gpus", lambda: 2)
    assert slot_devices(3, "cuda") == ["cuda:0", "cuda:1", "cuda:0"]
    assert slot_devices(2, "cuda:1") == ["cuda:1", "cuda:1"]
    assert slot_devices(2, "cpu") == ["cpu", "cpu"]
    with pytest.raises(ValueError):
        WorkerPool(size=0)


def test_a_gpu_gets_no_more_judges_than_half_its_memory_holds(monkeypatch):
    """16 workers asked on an 80 GiB H100 become 9 judges (4 GiB each in at most half of it); a 141 GB
    H200 keeps 16; each of two GPUs gets its own cap; a device whose memory cannot be read keeps all."""
    import torch

    import htam_engine.evaluate.pool as pool_mod
    from htam_engine.evaluate import devicelock

    def of(gib: float) -> object:
        return type("Props", (), {"total_memory": int(gib * devicelock.GIB)})()

    monkeypatch.setattr(pool_mod, "visible_gpus", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: of(79.2))
    assert slot_devices(16, "cuda") == ["cuda"] * 9
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: of(139.8))
    assert slot_devices(16, "cuda:0") == ["cuda:0"] * 16
    monkeypatch.setattr(pool_mod, "visible_gpus", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: of(79.2 if str(device) == "cuda:0" else 24))
    assert slot_devices(8, "cuda") == ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"]
    assert slot_devices(5, "cuda", judges_fitting=lambda device: None) == ["cuda:0", "cuda:1"] * 2 + ["cuda:0"]


async def test_a_problems_next_candidate_goes_to_the_judge_that_holds_its_baselines(small_problem):
    """Two idle workers: the second candidate of a problem goes to the worker that evaluated the
    first (its reference sandbox is reused), not to the one idle longest."""
    async with WorkerPool(size=2, device="cpu") as pool:
        first = await pool.evaluate(small_problem, triton_variant(), fast_config())
        served = pool.last_problems()
        second = await pool.evaluate(small_problem, triton_variant("y = y + 0.0"), fast_config())
        assert pool.last_problems() == served  # the same slot again; the other never used
    assert [first.status, second.status] == [Status.OK, Status.OK], second.diagnostics.message
    assert served.count(None) == 1
    assert not first.stages.reference_reused and second.stages.reference_reused
