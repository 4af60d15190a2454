"""process.kill_tree and freeze_tree: nothing of a killed tree outlives it, nothing of a frozen one runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from htam_engine.evaluate.process import freeze_tree, kill_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreapers are Linux's")

# A subreaper (as a sandbox is) whose helper leaves the process group and then keeps forking a
# child and exiting: at any moment the live helper is a new process, re-parented to the root.
# Each helper touches the heartbeat file (argv[1]): while it changes, a helper is alive. One that
# escaped (the test failing) stops once the file "<argv[1]>.stop" exists. argv[2]: seconds between
# hops (0: back to back).
HOPPER = r"""
import os, signal, sys, time
from htam_engine.evaluate import limits
limits.adopt_orphans()
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the exited helpers are reaped at once
beat, pause = sys.argv[1], float(sys.argv[2])
if os.fork() == 0:
    os.setsid()
    while not os.path.exists(beat + ".stop"):
        if os.fork():
            os._exit(0)
        with open(beat, "w") as fh:
            fh.write(str(time.monotonic()))
        time.sleep(pause)
    os._exit(0)
time.sleep(60)
"""


def _beats_within(path, seconds: float) -> bool:
    """Whether the heartbeat changes within `seconds`. Each hop needs two trips through the CPU
    (the fork, then the child's write): on CI's two cores beside a test spinning dozens of threads,
    a hop took most of a second, so the wait for a beat is long and only a live hopper ends it early."""
    before = path.read_text() if path.exists() else ""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if path.exists() and path.read_text() != before:
            return True
    return False


def _hopping(tmp_path, pause: float) -> subprocess.Popen:
    beat = tmp_path / "beat"
    root = subprocess.Popen([sys.executable, "-c", HOPPER, str(beat), str(pause)], start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert _beats_within(beat, 60), root.poll()
    return root


def test_a_helper_that_keeps_forking_out_of_the_group_dies_with_the_tree(tmp_path):
    try:
        root = _hopping(tmp_path, 0.002)
        kill_tree(root.pid, group=True)
        root.wait(5)
        assert not _beats_within(tmp_path / "beat", 1.0), "a helper outlived the tree"
    finally:
        (tmp_path / "beat.stop").touch()  # an escaped helper ends itself


@pytest.mark.parametrize("missed_first", [False, True], ids=["every read sees it", "the first read misses it"])
@pytest.mark.parametrize("pause", [0.002, 0.0], ids=["every 2 ms", "back to back"])
def test_a_frozen_tree_runs_nothing_a_helper_hopping_out_of_the_group_included(tmp_path, monkeypatch, pause,
                                                                                missed_first):
    """Red-team pass 30: a paused sandbox's helper forking back to back was missed by one read of the
    tree, and spun on under another judge's timed runs (sandbox_client.SandboxProcess.paused). On an
    idle machine a read rarely falls between a hop's fork and its parent's exit; "the first read
    misses it" makes the first read fall there, as it did under load."""
    from htam_engine.evaluate import proctree

    real, reads = proctree.descendants, []

    def descendants(pid: int) -> list[int]:
        reads.append(pid)
        return [] if missed_first and len(reads) == 1 else real(pid)

    try:
        root = _hopping(tmp_path, pause)
        monkeypatch.setattr(proctree, "descendants", descendants)
        freeze_tree(root.pid)
        monkeypatch.undo()
        assert not _beats_within(tmp_path / "beat", 1.0), "a helper ran on in a frozen tree"
        kill_tree(root.pid, group=True)
        root.wait(5)
    finally:
        (tmp_path / "beat.stop").touch()
