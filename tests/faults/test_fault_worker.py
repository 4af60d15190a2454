"""Candidates that crash, hang, hog memory, flood output or fork: each gets its status within
its timeout plus a small margin, the judge that evaluated it is untouched (the candidate ran in
a sandbox), the next candidate evaluates correctly, and no process of theirs is left behind."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass

import pytest
from fault_support import (
    HONEST,
    candidate,
    descendants,
    described,
    group_members,
    load_test_problem,
    quick_config,
    sandboxes,
    tagged,
    wait_until,
    worker_processes,
)

from htam_engine.evaluate.evaluator import Evaluator
from htam_engine.evaluate.pool import WorkerPool
from htam_engine.evaluate.result import Status

# Seconds past the timeout allowed for noticing the fault, killing the tree and reaping it.
MARGIN_S = 5.0
HANG_TIMEOUT_S = 4.0
# The escaped grandchild: its own session, re-parented away from the worker; found by this tag.
_DAEMON = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.execvp('sleep', ['sleep', '4243.2'])\n"
    "    os._exit(0)\n"
    "os.wait()\n"
)


@dataclass(frozen=True)
class Fault:
    name: str
    code: str
    statuses: tuple[Status, ...]
    timeout_s: float = 60.0
    memory_mb: int | None = None
    tag: str = ""  # a process this fault starts; it must be gone afterwards
    words: tuple[str, ...] = ()  # one of these appears in the result's message


FAULTS = [
    Fault("raise", candidate("raise RuntimeError('candidate fault 17')"), (Status.RUNTIME_ERROR,),
          words=("candidate fault 17",)),
    Fault("abort", candidate("os.abort()", header="import os"), (Status.RUNTIME_ERROR,), words=("SIGABRT",)),
    Fault("segfault_native", candidate("ctypes.memset(0, 1, 64)", header="import ctypes"),
          (Status.RUNTIME_ERROR,), words=("SIGSEGV",)),
    Fault("hang_python", candidate("while True:\n    pass"), (Status.TIMEOUT,), timeout_s=HANG_TIMEOUT_S,
          words=("timed out",)),
    Fault("hang_native", candidate("ctypes.CDLL(None).sleep(100000)", header="import ctypes"), (Status.TIMEOUT,),
          timeout_s=HANG_TIMEOUT_S, words=("timed out",)),
    Fault("host_memory", candidate("hog = []\nwhile True:\n    hog.append(b'x' * (1 << 26))"),
          (Status.RUNTIME_ERROR,), memory_mb=2500, words=("memory", "Memory")),
    Fault("flood_output", candidate("for _ in range(4):\n    os.write(1, b'o' * (1 << 20))\n"
                                    "    os.write(2, b'e' * (1 << 20))", header="import os"),
          (Status.OK, Status.REJECTED, Status.RUNTIME_ERROR)),
    Fault("fork_child_and_hang", candidate("while True:\n    pass", header="import os\nif os.fork() == 0:\n"
                                           "    os.execvp('sleep', ['sleep', '4243.1'])"),
          (Status.TIMEOUT,), timeout_s=HANG_TIMEOUT_S, tag="4243.1"),
    Fault("escaped_grandchild_and_hang", candidate("while True:\n    pass", header=_DAEMON), (Status.TIMEOUT,),
          timeout_s=HANG_TIMEOUT_S, tag="4243.2"),
]


@pytest.fixture(scope="module")
def problem():
    return load_test_problem()


@pytest.fixture(scope="module")
def evaluator():
    ev = Evaluator("cpu")
    yield ev
    ev.close()
    assert wait_until(lambda: not worker_processes(), 10), "a worker outlived Evaluator.close()"


def _honest(ev, problem):
    t0 = time.monotonic()
    r = ev.evaluate(problem, HONEST, quick_config())
    return r, time.monotonic() - t0


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault_gets_its_status_and_the_next_candidate_is_fine(fault, problem, evaluator, figures):
    warm, _ = _honest(evaluator, problem)  # a warm judge: the timeout clock is the candidate's alone
    assert warm.status is Status.OK, warm.diagnostics.message
    (judge,) = worker_processes()
    # The judge forks the next spare as it hands the current one over (Judge.candidate_sandbox): on a
    # loaded box it may not be there yet, and `before` would then hold only the reference's sandbox
    # (no sandbox of this candidate to see go).
    wait_until(lambda: len(sandboxes()) >= 2, 10)
    before = {p.pid for p in sandboxes()}  # the spare that will run this candidate, and the reference's
    t0 = time.monotonic()
    r = evaluator.evaluate(problem, fault.code, quick_config(timeout_s=fault.timeout_s, memory_limit_mb=fault.memory_mb))
    wall = time.monotonic() - t0
    survived, recover_s = False, None
    try:
        assert r.status in fault.statuses, (r.status, r.diagnostics.message, r.diagnostics.log[-1500:])
        assert wall <= fault.timeout_s + MARGIN_S, f"status after {wall:.1f} s (timeout {fault.timeout_s} s)"
        if fault.words:
            assert any(w in r.diagnostics.message for w in fault.words), r.diagnostics.message
        assert len(r.diagnostics.log) < 200_000  # output is bounded, whatever the candidate printed
        # The candidate's sandbox is gone with its whole group (whatever the verdict); the judge is not
        # (unless this fault's memory setting asked for a judge with other sandbox limits).
        assert wait_until(lambda: before - {p.pid for p in sandboxes()}, 5), (
            f"before: {described(before)} | now: {described(p.pid for p in sandboxes())}")
        used = before - {p.pid for p in sandboxes()}
        assert wait_until(lambda: not any(group_members(pid) for pid in used), 5)
        if fault.memory_mb is None:
            assert len(used) == 1, (before, used, sandboxes())
            assert judge.is_running() and worker_processes() == [judge]
        if fault.tag:
            assert wait_until(lambda: not tagged(fault.tag), 5), f"left behind: {tagged(fault.tag)}"
        after, recover_s = _honest(evaluator, problem)
        assert after.status is Status.OK, after.diagnostics.message
        assert len(worker_processes()) == 1
        survived = True
    finally:
        figures.add("candidate crashes, hangs, floods, forks, memory", tried=1, survived=int(survived),
                    recover_s=recover_s if survived and r.status is not Status.OK else None, note=fault.name)


def test_forked_child_of_a_passing_candidate_dies_with_its_sandbox(problem, figures):
    """A candidate that passes but leaves a daemon behind (double fork, its own session): the
    daemon is re-parented to the sandbox (a subreaper) and goes with it when its evaluation ends."""
    ev = Evaluator("cpu")
    try:
        code = candidate(header=_DAEMON.replace("4243.2", "4243.3"))
        r = ev.evaluate(problem, code, quick_config())
        assert r.status in (Status.OK, Status.REJECTED), r.diagnostics.message
        gone = wait_until(lambda: not tagged("4243.3"), 5)  # before the judge is closed
    finally:
        ev.close()
    figures.add("candidate crashes, hangs, floods, forks, memory", tried=1, survived=int(gone),
                note="passing candidate leaves a daemon")
    assert gone, f"left behind: {tagged('4243.3')}"


async def test_engine_loop_stays_responsive_through_a_hang(problem, figures):
    """The pool runs workers off the event loop: a heartbeat keeps ticking while a worker
    hangs until its timeout, and the pool then evaluates an honest candidate."""
    beats: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        while not stop.is_set():
            beats.append(time.monotonic())
            await asyncio.sleep(0.05)

    others = {p.pid for p in worker_processes()}  # the module's evaluator keeps its judge
    hb = asyncio.create_task(heartbeat())
    async with WorkerPool(1, "cpu") as pool:
        hang = await pool.evaluate(problem, candidate("while True:\n    pass"), quick_config(timeout_s=HANG_TIMEOUT_S))
        good = await pool.evaluate(problem, HONEST, quick_config())
    stop.set()
    await hb
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    ok = hang.status is Status.TIMEOUT and good.status is Status.OK and max(gaps) < 1.0
    figures.add("candidate crashes, hangs, floods, forks, memory", tried=1, survived=int(ok),
                note="event loop stays responsive")
    assert hang.status is Status.TIMEOUT
    assert good.status is Status.OK, good.diagnostics.message
    assert max(gaps) < 1.0, f"event loop blocked for {max(gaps):.2f} s"
    assert wait_until(lambda: {p.pid for p in worker_processes()} <= others, 10)


def test_no_descendants_left_after_the_suite(evaluator):
    evaluator.close()
    shared = sys.modules.get("cheats.harness")  # the evaluate tests' judge, when they ran in this session
    if shared is not None:
        shared.close_judges()
    assert wait_until(lambda: not [p for p in descendants() if p.status() != "zombie"], 10), descendants()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["illegal_address", "device_memory"])
def test_gpu_faults_leave_a_healthy_judge_for_the_next_candidate(kind, figures):
    from htam_engine.problems import load_problem
    from fault_support import PROBLEM

    problem = load_problem(str(PROBLEM), device="cuda")
    if kind == "illegal_address":
        code = HONEST.replace("tl.store(y_ptr + offs,", "tl.store(y_ptr + offs + (1 << 42),")
    else:
        code = candidate("hog = []\nwhile True:\n    hog.append(torch.empty(1 << 31, dtype=torch.uint8, device=x.device))")
    ev = Evaluator("cuda")
    try:
        assert ev.evaluate(problem, HONEST, quick_config(device="cuda")).status is Status.OK
        judge = ev.worker_pid
        t0 = time.monotonic()
        r = ev.evaluate(problem, code, quick_config(device="cuda", timeout_s=60))
        assert time.monotonic() - t0 < 60 + MARGIN_S
        assert r.status is Status.RUNTIME_ERROR, (r.status, r.diagnostics.message)
        assert ev.worker_pid == judge  # the candidate's broken CUDA context was its sandbox's
        t0 = time.monotonic()
        after = ev.evaluate(problem, HONEST, quick_config(device="cuda"))
        recover = time.monotonic() - t0
        assert after.status is Status.OK, after.diagnostics.message
        figures.add("GPU faults (illegal address, device memory)", tried=1, survived=1, recover_s=recover)
    finally:
        ev.close()
    assert wait_until(lambda: not worker_processes(), 10)
