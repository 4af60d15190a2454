"""procstate: what another process of the same user changed in a sandbox from outside."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from htam_engine.evaluate.procstate import ProcessState, changes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit and sched_* are Linux's")


@pytest.fixture
def sibling():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def threaded():
    """A process with a second thread (a reference sandbox's work can run on one); its thread id."""
    proc = subprocess.Popen([sys.executable, "-c", "import threading, time; "
                             "threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); time.sleep(60)"])
    for _ in range(100):
        tids = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        if tids:
            break
        time.sleep(0.05)
    yield proc.pid, tids[0]
    proc.kill()
    proc.wait()


def test_an_untouched_process_reads_unchanged(sibling):
    assert changes(ProcessState.read(sibling), sibling) == ""


def test_a_lowered_priority_and_a_capped_limit_are_named(sibling):
    before = ProcessState.read(sibling)
    os.setpriority(os.PRIO_PROCESS, sibling, 7)
    soft, hard = resource.prlimit(sibling, resource.RLIMIT_NOFILE)
    resource.prlimit(sibling, resource.RLIMIT_NOFILE, (min(soft, 64), min(hard, 64)))
    said = changes(before, sibling)
    assert "nice 0 -> 7" in said and "RLIMIT_NOFILE" in said, said


def test_a_gone_process_reads_as_nothing_to_say(sibling):
    before = ProcessState.read(sibling)
    os.kill(sibling, 9)
    os.waitpid(sibling, 0)
    assert ProcessState.read(sibling) is None and changes(before, sibling) == ""


def test_another_thread_reniced_or_pinned_is_named(threaded):
    pid, tid = threaded
    before = ProcessState.read(pid)
    assert changes(before, pid) == ""
    cpus = os.sched_getaffinity(tid)
    os.setpriority(os.PRIO_PROCESS, tid, 9)
    os.sched_setaffinity(tid, {min(cpus)})
    said = changes(before, pid)
    assert f"thread {tid}'s nice 0 -> 9" in said, said
    assert (f"thread {tid}'s cpus" in said) == (len(cpus) > 1), said
    assert "nice 0" not in said.replace(f"thread {tid}'s nice", "")  # the main thread is untouched


def test_every_resource_limit_and_the_scheduling_attributes_are_read():
    """All sixteen of Linux's limits (RLIMIT_LOCKS by its number) and sched_getattr's fields beyond
    policy and nice: a sched_setattr slice or a lowered RLIMIT_RTTIME left policy, nice and the nine
    limits read before as they were (cheat_sched_attr_unseen)."""
    import os

    from htam_engine.evaluate import procstate

    state = procstate.ProcessState.read(os.getpid())
    assert state is not None
    assert {name for name, *_ in state.limits} >= {"RLIMIT_LOCKS", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_RSS"}
    assert len(state.main.attr) == 6  # flags, runtime, deadline, period, util_min, util_max
