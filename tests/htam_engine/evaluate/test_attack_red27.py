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
a lock then looked at who held it in /proc/locks and killed its own candidate there; pass 28 took
the lock in a child that exited, which /proc/locks names instead, and held every build lock so
(another judge's honest candidate timed out in its compile). htam's locks are now record locks,
which no flock conflicts with and no sandbox may take (record_lock.py, seccomp.py); the judge, not
the sandbox, holds a build's lock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

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
@pytest.mark.parametrize("cheat", ["cheat_hold_time_lock", "cheat_hold_lock_dead_taker"])
def test_a_candidates_lock_on_the_judges_timing_lock_holds_up_no_judge(tmp_path, cheat):
    """Each cheat keeps its lock for as long as its sandbox lives: where it held the judges' lock,
    its own judge would wait for it until the test's timeout (and every judge on the machine with it)."""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("softmax", "honest_softmax"))  # the timing lock's file exists from here on
        honest_ok(j.run("softmax", cheat))  # its kernel is honest: only the lock is at stake
        honest_ok(j.run("softmax", "honest_softmax"))
