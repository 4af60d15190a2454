"""The judge's lean read of the process table (evaluate/proctree.py): the tree it stops around
every round's baseline calls is the sandbox's whole tree, read from the kernel's children lists
or, where it keeps none, through psutil."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from htam_engine.evaluate import proctree


@pytest.fixture
def tree():
    """A shell with a child and a grandchild (a subshell's sleep), all sleeping."""
    p = subprocess.Popen(["bash", "-c", "sleep 30 & (sleep 30 & wait) & wait"])
    deadline = time.monotonic() + 10
    while len(psutil.Process(p.pid).children(recursive=True)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    yield p
    for child in psutil.Process(p.pid).children(recursive=True):
        child.kill()
    p.kill()
    p.wait()


@pytest.mark.parametrize("children_files", [True, False], ids=["children files", "psutil"])
def test_descendants_are_every_process_below_the_root(tree, monkeypatch, children_files):
    if children_files and not proctree._children_files():
        pytest.skip("this kernel keeps no children lists")
    monkeypatch.setattr(proctree, "CHILDREN_FILES", children_files)
    expected = sorted(c.pid for c in psutil.Process(tree.pid).children(recursive=True))
    assert len(expected) == 3 and sorted(proctree.descendants(tree.pid)) == expected
    leaf = next(pid for pid in expected if not psutil.Process(pid).children())
    assert proctree.descendants(leaf) == []


def test_a_stopped_or_gone_process_is_settled_and_a_running_one_is_not(tree):
    assert not proctree.settled(tree.pid)
    os.kill(tree.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while not proctree.settled(tree.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proctree.settled(tree.pid)
    os.kill(tree.pid, signal.SIGCONT)
    assert proctree.settled(1 << 22) is True  # beyond pid_max: no such process


def test_waiting_tells_a_blocked_process_from_a_running_one():
    """SandboxProcess.wait_idle relies on it: the reference sandbox is let alone only once it blocks."""
    waiting = proctree.waiting
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 20
        while not waiting(sleeper.pid) and time.monotonic() < deadline:  # past its start-up
            time.sleep(0.05)
        assert waiting(sleeper.pid)
        assert not waiting(busy.pid)
    finally:
        for p in (sleeper, busy):
            p.kill()
            p.wait()
    assert waiting(busy.pid)  # gone: it runs nothing


HALF_TICK_BURNER = r"""
import os, sys, time
tick = 1.0 / os.sysconf("SC_CLK_TCK")
child = os.fork()
if child == 0:  # burns until its CPU time sits half a tick past a tick, then says it and sleeps
    while time.process_time() < 3 * tick or (time.process_time() / tick) % 1 < 0.5:
        pass
    spent = time.process_time()
    os.write(1, f"{os.getpid()} {spent * 1e3}\n".encode())
    time.sleep(30)
    os._exit(0)
time.sleep(30)
"""


def test_the_cpu_time_of_a_process_below_a_sandbox_is_read_below_a_tick():
    """The judge's snapshot of a sandbox (its helper processes' CPU time, clock.hidden_cpu_check)
    reads each process below it from its CPU clock: at /proc stat's tick a helper's time is cut
    down by up to a tick at each read, which had left a helper's 40 ms within the rule's floor."""
    from types import SimpleNamespace

    from htam_engine.evaluate.sandbox_client import SandboxProcess

    parent = subprocess.Popen([sys.executable, "-c", HALF_TICK_BURNER], stdout=subprocess.PIPE, text=True)
    try:
        pid, spent_ms = parent.stdout.readline().split()
        snap = SandboxProcess.cpu_snapshot(SimpleNamespace(pid=parent.pid, thread_cpu_ns=lambda: {}))
        # half a tick past a tick (5 ms at 100 Hz): the tick's reading would be that far below
        assert abs(snap.below_ms[int(pid)] - float(spent_ms)) < 0.25 * proctree.TICK_MS, (snap.below_ms, spent_ms)
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()


def test_the_page_faults_a_process_takes_are_read_from_outside():
    """The judge's count of a sandbox's minor faults (clock.fresh_pages_check): 64 MiB touched page by
    page after a read is at least 16,384 more."""
    child = subprocess.Popen([sys.executable, "-c", "import sys, mmap\nm = mmap.mmap(-1, 64 << 20)\n"
                              "sys.stdin.readline()\nm[::4096] = b'x' * (16384)\nprint(flush=True)\nsys.stdin.readline()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        before = proctree.minor_faults(child.pid)
        child.stdin.write("\n")
        child.stdin.flush()
        child.stdout.readline()
        after = proctree.minor_faults(child.pid)
        assert before is not None and after - before >= 16384, (before, after)
    finally:
        child.kill()
        child.wait()
    assert proctree.minor_faults(child.pid) is None  # gone



def test_the_anonymous_memory_a_process_allocates_is_read_from_outside_and_a_zero_page_read_is_not():
    """The judge's read of a sandbox's resident anonymous memory (clock.fresh_memory_check): 64 MiB written
    grows it by 64 MiB; 64 MiB only read (the zero page) grows it by nothing. The child is non-dumpable,
    as a sandbox is."""
    code = ("import ctypes, mmap, sys\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"
            "flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS\nw, r = mmap.mmap(-1, 64 << 20, flags=flags), "
            "mmap.mmap(-1, 64 << 20, flags=flags)\nprint(flush=True)\nsys.stdin.readline()\nw[::4096] = b'x' * 16384\n"
            "print(flush=True)\nsys.stdin.readline()\nr[::4096]\nprint(flush=True)\nsys.stdin.readline()")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()  # mapped, nothing touched yet
        figures = [proctree.memory_status(child.pid)[0]]
        for _ in range(2):
            child.stdin.write("\n")
            child.stdin.flush()
            child.stdout.readline()
            figures.append(proctree.memory_status(child.pid)[0])
        slack = proctree.rss_slack_bytes()
        assert abs(figures[1] - figures[0] - (64 << 20)) <= slack, figures
        assert abs(figures[2] - figures[1]) <= slack, figures
    finally:
        child.kill()
        child.wait()



def test_the_judge_reads_whether_huge_pages_may_serve_a_process():
    """A sandbox turns transparent huge pages off before any candidate code (prctl PR_SET_THP_DISABLE): one
    fault would map 2 MiB (red-team pass 22). It can turn them on again; the judge reads which from outside."""
    code = ("import ctypes, sys\nlibc = ctypes.CDLL(None)\nlibc.prctl(41, 1, 0, 0, 0)\nprint(flush=True)\n"
            "sys.stdin.readline()\nlibc.prctl(41, 0, 0, 0, 0)\nprint(flush=True)\nsys.stdin.readline()")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()
        off = proctree.memory_status(child.pid)[1]
        child.stdin.write("\n")
        child.stdin.flush()
        child.stdout.readline()
        assert (off, proctree.memory_status(child.pid)[1]) == (False, True)
    finally:
        child.kill()
        child.wait()
