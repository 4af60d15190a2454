"""Cheats of a twenty-seventh red-team pass (CPU, 45 minutes), aimed at what the judge's cleanups
assume. Two got through, both honest softmaxes, ok with no finding, and both mended: a chain of
4,000 nested folders, which shutil.rmtree and os.walk could not walk on Python 3.11
(RecursionError), in the sandbox's scratch folder (the zygote died, and every later zygote at its
start: every later evaluation on the machine a harness error) and in /dev/shm (the sweep died
before removing the files beside it). Cleanups now walk by descriptor without recursion
(owned_tree.py, test_owned_tree), and one that fails is said, never lets the zygote die
(zygote._clean_up). A third changed no verdict: a sandbox may read the judges' lock files, and
a flock on the timing lock, let go by a timer after 20 s, stalled every judge on the machine
meanwhile (held for good, its own judge waited the hour a lock wait may last). A judge waiting for
a lock now looks at who holds it, and kills its own candidate there (lock_held); a lock taken by
a child that then exited escapes that look (red-team pass 28, README: not mended)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cheats.caught import assert_caught
from cheats.isolated import isolated_judge
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def test_a_chain_of_folders_in_the_scratch_folder_leaves_later_judges_working(tmp_path):
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("softmax", "cheat_deep_private_tree"))  # its kernel is honest: only the leftover is at stake
        honest_ok(j.run("softmax", "honest_softmax"))  # the same judge: its zygote lives
    with isolated_judge(tmp_path) as fresh:  # a new zygote, which removes what a dead one left
        honest_ok(fresh.run("softmax", "honest_softmax"))
    assert not list(Path("/tmp").glob("htam-candidate-compile-*/**/htam-test-deep-*"))


def test_a_chain_of_folders_in_dev_shm_is_swept_with_the_files_beside_it(tmp_path):
    left = "htam-test-deep-*"
    try:
        with isolated_judge(tmp_path) as j:
            r = j.run("softmax", "cheat_deep_shm_tree")
            assert r.status is Status.OK, (r.status, r.diagnostics.message)
            deadline = time.monotonic() + 15  # the zygote sweeps once it has reaped the sandbox
            while list(Path("/dev/shm").glob(left)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not list(Path("/dev/shm").glob(left)), sorted(p.name for p in Path("/dev/shm").glob(left))
            honest_ok(j.run("softmax", "honest_softmax"))
    finally:
        from htam_engine.evaluate import owned_tree

        for junk in Path("/dev/shm").glob(left):
            owned_tree.remove(junk)


@pytest.mark.timeout(300)
def test_a_candidate_holding_the_judges_timing_lock_is_killed_and_named(tmp_path):
    """Without the look at who holds the lock, this judge waited for its own candidate for ever
    (the engine's backstop gives up after the hour a lock wait may last)."""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("softmax", "honest_softmax"))  # the timing lock's file exists from here on
        started = time.monotonic()
        assert_caught(j.run("softmax", "cheat_hold_time_lock"), "lock_held")
        assert time.monotonic() - started < 120
        honest_ok(j.run("softmax", "honest_softmax"))


@pytest.mark.xfail(strict=True, reason=(
    "red-team pass 28: /proc/locks names the process that took a flock, not the one keeping its open "
    "file; the candidate's child took the timing lock and exited, so the lock_held look found none of "
    "its processes, and its judge waited (uncharged) until an alarm let the lock go: ok, no finding. "
    "Closing it needs the holder found by its open descriptors (hidden by a non-dumpable sandbox from "
    "a judge that is not root) or lock files no sandbox can open"))
@pytest.mark.timeout(300)
def test_a_lock_taken_by_a_child_that_exited_is_found_and_named(tmp_path):
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("softmax", "honest_softmax"))  # the timing lock's file exists from here on
        assert_caught(j.run("softmax", "cheat_hold_lock_dead_taker"), "lock_held")
