"""Cheats of a twenty-sixth red-team pass (CPU, 50 minutes), aimed at what a candidate can leave for
later evaluations. Four got through, each an honest softmax that was ok with no finding while it
poisoned what came after; all four are mended. None inflated its own speedup or was wrong on inputs
the checks do not draw.

- cheat_chmod_locks: the write bit taken off the builds' lock folder (chmod is no Landlock right;
  the builds' locks have since moved beside the judges', which no sandbox may write, or take):
  every later new source a compile error, for good. The sandbox's seccomp filter now refuses a mode
  without the owner's read and write bits (seccomp.py).
- cheat_shm_chmod_leftover: pass 23's /dev/shm files in a folder made read-only, which the sweep
  could not empty (1.5 GB kept). The chmod is refused; what a mode at creation leaves, the sweep
  opens before it removes (owned_tree.py, test_shm_sweep).
- cheat_sysv_shm_leftover: System V shared memory, which belongs to no process (4.6 GB kept after
  the judge was gone). shmget, semget and msgget are refused.
- cheat_lock_symlink: the timing lock replaced by a link; the judge created the file wherever it
  pointed, or failed every later evaluation. The judges' locks now live in a folder no sandbox may
  write, and a lock is never opened through a link (cache.py, test_cache).

The permission bits the first two played on bind only a process without CAP_DAC_OVERRIDE: where
the suite runs as root their poison did nothing, but the refusals below are the filter's, for root
too.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from cheats.harness import seccomp_refusal
from cheats.isolated import isolated_judge
from htam_engine.evaluate import cache
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok

pytestmark = pytest.mark.skipif(seccomp_refusal() is not None, reason=f"no seccomp filter here: {seccomp_refusal()}")


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    """One isolated judge: what these cheats poison is its own cache, thrown away after."""
    with isolated_judge(tmp_path_factory.mktemp("red26")) as j:
        honest_ok(j.run("softmax", "honest_softmax"))  # the cache's folders and the timing lock exist
        yield j


def _refused(r) -> None:
    assert r.status is not Status.OK and "Operation not permitted" in r.diagnostics.message, (
        r.status, r.diagnostics.message)


def test_a_candidate_cannot_take_the_write_bit_off_the_lock_folder(judge):
    folder = judge.root / "cache" / cache.LOCKS
    mode = stat.S_IMODE(folder.stat().st_mode)
    _refused(judge.run("softmax", "cheat_chmod_locks"))
    assert stat.S_IMODE(folder.stat().st_mode) == mode
    honest_ok(judge.run("relu", "honest_relu_triton"))  # a new source: a new build lock


def test_a_candidate_cannot_leave_a_read_only_folder_in_dev_shm(judge):
    left = "htam-test-shm-chmod-*"
    try:
        _refused(judge.run("softmax", "cheat_shm_chmod_leftover"))
        deadline = time.monotonic() + 15  # the zygote sweeps once it has reaped the sandbox
        while list(Path("/dev/shm").glob(left)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not list(Path("/dev/shm").glob(left)), sorted(p.name for p in Path("/dev/shm").glob(left))
    finally:
        for junk in Path("/dev/shm").glob(left):
            os.chmod(junk, 0o700)
            for f in junk.iterdir():
                f.unlink()
            junk.rmdir()


def _segments() -> int:
    """System V shared memory segments of this user (/proc/sysvipc/shm: uid is the 8th column)."""
    with open("/proc/sysvipc/shm") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return sum(1 for row in rows if int(row[7]) == os.getuid())


def test_a_candidate_cannot_leave_system_v_shared_memory_behind(judge):
    before = _segments()
    _refused(judge.run("softmax", "cheat_sysv_shm_leftover"))
    assert _segments() == before


def test_a_link_at_the_timing_lock_is_refused_and_the_judge_creates_nothing_where_it_points(judge):
    r = judge.run("softmax", "cheat_lock_symlink")
    assert r.status is not Status.OK and "Permission denied" in r.diagnostics.message, (r.status, r.diagnostics.message)
    assert not (judge.root / "made-by-the-judge").exists()
    assert not (judge.root / "cache" / cache.LOCKS / "time-cpu.lock").is_symlink()
    honest_ok(judge.run("softmax", "honest_softmax"))
