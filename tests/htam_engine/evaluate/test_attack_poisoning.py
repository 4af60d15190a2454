"""Cheats that reach past their own sandbox: the processes beside it (the reference sandbox that
times the baselines, the spare sandbox forked for the next candidate, the zygote) and the files
every later evaluation reads (the compile cache's records, the interpreter's startup, inductor's
cache, the timing locks, the disk). Each must leave the next honest candidate's verdict and
speedup as they would have been.

Every test runs in a judge of its own (cheats/isolated.py: its caches and the sandboxes'
PYTHONPATH under a temporary folder), so what a cheat poisons is thrown away with it. A test
the current judge fails is marked xfail(strict=True) with what the judge misses.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from cheats.caught import assert_caught
from cheats.isolated import IsolatedJudge, isolated_judge
from htam_engine.evaluate.result import Status
from htam_engine.record_lock import EXCLUSIVE, record_lock

OK = Status.OK


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    """One isolated judge for the cheats whose poison can be washed off between tests."""
    with isolated_judge(tmp_path_factory.mktemp("attack-judge")) as j:
        yield j


@pytest.fixture
def clean(judge: IsolatedJudge):
    """The module's judge, washed after the test: stopped processes continued, failure records,
    junk and lock files gone, the reference and spare sandboxes replaced."""
    yield judge
    for p in judge.processes():
        p.resume()
    for record in (judge.root / "cache" / "build").glob("*/.htam-build-failed.json"):
        record.unlink()
    (judge.root / "cache" / "junk.bin").unlink(missing_ok=True)
    if judge.judge.baseline is not None:
        judge.judge.baseline.close()
        judge.judge.baseline = None
    if judge.judge._spare is not None:
        judge.judge._spare.kill()
        judge.judge._spare = None


def honest_ok(r) -> None:
    assert r.status is OK, (r.status, r.diagnostics.message, r.integrity)


# ---------------------------------------------------------------- processes beside the sandbox
def test_stopping_the_reference_sandbox_does_not_move_the_baseline(clean):
    """Caught by pausing the candidate's whole tree while the baselines run."""
    honest = clean.run("matmul_relu", "honest_matmul_relu")
    honest_ok(honest)
    r = clean.run("matmul_relu", "cheat_stop_reference")
    if r.status is OK:
        # Not inflated: the eager baseline measured beside the cheat is the one measured without it.
        assert r.ref_runtime_ms < 2.5 * honest.ref_runtime_ms, (r.ref_runtime_ms, honest.ref_runtime_ms)


# Not strict: on this 2-core host the watcher's polling hits the baseline calls in some runs only.
@pytest.mark.xfail(strict=False, reason=(
    "the pause and the kill reach the sandbox's tree only: a watcher double-forked after the sandbox turned off "
    "its subreaper flag and stopped the zygote (so no sweep ends it) outlives the sandbox and stops the reference "
    "sandbox inside eager trials beside the candidate and alone: seen at 1.4x, 1.8x, 2.4x against an honest "
    "0.4-0.8x with no finding; in other runs it misses the alone rounds (baseline_disturbed, alone figure used)"))
def test_a_candidate_leaves_no_process_behind_to_slow_its_baselines(clean):
    honest = clean.run("matmul_relu", "honest_matmul_relu", trials=8)
    honest_ok(honest)
    r = clean.run("matmul_relu", "cheat_stop_reference_orphan", trials=8)
    if r.status is OK:
        assert r.ref_runtime_ms < 2.5 * honest.ref_runtime_ms, (r.ref_runtime_ms, honest.ref_runtime_ms)


def test_the_clock_rules_copy_bandwidth_is_measured_before_any_candidate_runs(tmp_path):
    """Red-team pass 5: measured in the first evaluation, the copy bandwidth below which a trial is a
    forged time was cut 5-11x by a helper that candidate forked, stopping the judge (same user)
    between its copies, for every later candidate of that judge (an honest kernel writing a large
    output fast would then read as forged). The judge measures it at its start, before any
    candidate's code exists, and keeps that figure."""
    with isolated_judge(tmp_path) as j:
        measured = j.judge.bandwidth
        assert measured > 1e8  # bytes a second: any host copies faster than 100 MB/s
        honest_ok(j.run("relu", "honest_relu_triton"))
        assert j.judge.bandwidth == measured


def test_stopping_the_spare_sandbox_leaves_the_next_candidate_alone(clean, monkeypatch):
    import htam_engine.evaluate.channel as channel

    monkeypatch.setattr(channel, "HARNESS_DEADLINE_S", 10.0)  # a frozen sandbox costs 10 s here, not 600
    honest_ok(clean.run("relu", "honest_relu_triton"))
    clean.run("relu", "cheat_stop_spare")
    honest_ok(clean.run("relu", "honest_relu_triton", timeout_s=10.0))


def test_a_killed_zygote_still_reading_as_running_hands_no_orphaned_spare_to_the_next_candidate(tmp_path,
                                                                                                 monkeypatch):
    # A zygote a candidate SIGKILLed may still read as running (poll) while it exits; its spare
    # sandbox dies with it. Here the exit window is held open: only a round trip can tell.
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        zygote = j.judge.zygote
        monkeypatch.setattr(zygote, "alive", lambda: zygote.sock is not None)
        os.kill(zygote.proc.pid, signal.SIGKILL)
        zygote.proc.wait()
        honest_ok(j.run("relu", "honest_relu_triton"))


def test_stopping_the_zygote_leaves_later_candidates_alone(tmp_path, monkeypatch):
    import htam_engine.evaluate.zygote_client as zygote_client

    monkeypatch.setattr(zygote_client, "FORK_S", 5.0)  # a frozen zygote costs 5 s a fork here, not 60
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        j.run("relu", "cheat_stop_zygote")
        later = [j.run("relu", "honest_relu_triton") for _ in range(2)]  # the spare, then a fresh fork
    for r in later:
        honest_ok(r)


# ---------------------------------------------------------------- files later evaluations read
def test_failure_records_written_by_a_candidate_do_not_fail_later_candidates(clean):
    honest_ok(clean.run("relu", "honest_relu_triton"))
    clean.run("relu", "cheat_failed_marker")
    honest_ok(clean.run("relu", "honest_relu_triton"))


def test_deleting_the_timing_locks_does_not_let_two_judges_time_at_once(clean):
    honest_ok(clean.run("relu", "honest_relu_triton"))  # the lock files exist from here on
    other = open(clean.root / "cache" / "locks" / "time-cpu.lock", "a+")  # another judge, timing
    record_lock(other.fileno(), EXCLUSIVE)
    release_at = time.monotonic() + 5.0

    def release() -> None:
        time.sleep(max(0.0, release_at - time.monotonic()))
        other.close()  # lets go of its lock

    holder = threading.Thread(target=release)
    holder.start()
    try:
        clean.run("relu", "cheat_unlink_locks")
        later = clean.run("relu", "honest_relu_triton")
        finished = time.monotonic()
    finally:
        holder.join()
    honest_ok(later)
    assert finished >= release_at, f"timed {release_at - finished:.1f} s before the other judge let go of the device"


def test_a_candidate_cannot_leave_hundreds_of_megabytes_behind(clean, monkeypatch):
    monkeypatch.setenv("HTAM_SANDBOX_FILE_MB", "32")  # the default (4 GiB) bounds a file the same way, higher
    r = clean.run("relu", "cheat_fill_disk")
    junk = list((clean.root / "cache" / "build").glob("*/junk.bin"))
    assert all(j.stat().st_size <= (32 << 20) for j in junk), [j.stat().st_size for j in junk]
    assert r.status is not OK and "sandbox_file_mb" in r.diagnostics.message, (r.status, r.diagnostics.message)


def test_many_files_each_under_the_file_limit_are_not_left_behind(clean, monkeypatch):
    """Each of 33 files of 8 MB passes the file limit; together they are more than a build folder
    may keep once its candidate is gone: the folder is removed and the candidate rejected."""
    monkeypatch.setenv("HTAM_SANDBOX_FILE_MB", "32")
    r = clean.run("relu", "cheat_fill_disk_many")
    assert_caught(r, "files_left")
    assert not list((clean.root / "cache" / "build").glob("*/junk[0-9]*.bin"))
    honest_ok(clean.run("relu", "honest_relu_triton"))  # the folder of the next build is its own, and kept


def test_memory_a_candidate_leaves_in_dev_shm_goes_with_its_sandbox(clean):
    """Files in /dev/shm are memory no limit of the sandbox counts; the zygote removes those the
    sandbox left once it reaps it (shm_sweep), so they are not kept from later evaluations."""
    left = "htam-test-shm-left-*"
    try:
        honest_ok(clean.run("relu", "cheat_shm_leftover"))  # its kernel is honest: only the files are at stake
        deadline = time.monotonic() + 15
        while list(Path("/dev/shm").glob(left)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not list(Path("/dev/shm").glob(left)), sorted(p.name for p in Path("/dev/shm").glob(left))
    finally:
        for junk in Path("/dev/shm").glob(left):
            junk.unlink(missing_ok=True)


def test_a_sitecustomize_planted_by_a_candidate_does_not_slow_later_baselines(tmp_path):
    with isolated_judge(tmp_path) as j:
        before = j.run("relu", "honest_relu_triton")
        honest_ok(before)
        j.run("relu", "cheat_sitecustomize")
        after = j.run("relu", "honest_relu_triton")
    honest_ok(after)
    assert after.ref_runtime_ms < 10 * before.ref_runtime_ms + 1.0, (before.ref_runtime_ms, after.ref_runtime_ms)


def test_a_poisoned_inductor_cache_does_not_change_a_later_candidates_result(tmp_path):
    """A candidate that edits the wrapper inductor generated for a product finds no later sandbox
    loading it: each compiles into folders of its own."""
    with isolated_judge(tmp_path) as j:
        before = j.run("matmul_relu", "honest_compiled_matmul_relu")
        honest_ok(before)
        honest_ok(j.run("matmul_relu", "cheat_inductor_poison"))
        after = j.run("matmul_relu", "honest_compiled_matmul_relu")
    honest_ok(after)


def test_a_poisoned_inductor_cache_does_not_slow_the_compile_baseline(tmp_path):
    with isolated_judge(tmp_path) as j:
        j.run("relu", "cheat_inductor_cache", time_compile_baseline=True)
        after = j.run("relu", "honest_relu_triton", time_compile_baseline=True)
    honest_ok(after)
    assert after.compile_ref_runtime_ms is not None
    # Unpoisoned, compiled ReLU on 4 x 256 takes well under a millisecond here; the poison adds 20.
    assert after.compile_ref_runtime_ms < 10.0, after.compile_ref_runtime_ms
