"""Cheats of an eleventh red-team pass (CPU, matmul_relu): state of the processes beside a candidate
that the judge does not read (a custom EEVDF slice, resource limits outside procstate's list), work
that SIGSTOP does not stop while the baselines are timed, and work moved where the CPU accounting of
the timed trials does not look (a grandchild reaped by a helper, a swarm of threads each under the
busy-thread bar).

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and its
class). A cheat that gets through is xfail(strict=True) with what the judge misses, its honest
counterpart shown ok beside it, so the test flips when the judge learns to catch it. Figures are
from the 2-core box (the Triton ReLU runs in the interpreter, ~17 ms of the honest 17-19 ms).
"""

from __future__ import annotations

import pytest

from cheats.harness import finding, rules, run_check
from cheats.isolated import isolated_judge
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok, missed, xfail

OK = Status.OK
TRIALS = 10


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """A temporary folder of this test's own for the judges it makes (their zygotes' mkdtemp)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def beside_honest(cheat: str) -> tuple:
    """The honest matmul_relu and the cheat, each through the suite's judge at TRIALS trials."""
    honest, result = (run_check("matmul_relu", name, trials=TRIALS) for name in ("honest_matmul_relu", cheat))
    honest_ok(honest)
    return honest, result


def no_gain(cheat, honest, factor: float) -> None:
    """The cheat turned down, or no faster than `factor` times the honest candidate's speedup."""
    assert cheat.status is not OK or cheat.speedup_eager < factor * honest.speedup_eager, (
        cheat.status, cheat.speedup_eager, honest.speedup_eager, cheat.ref_runtime_ms, honest.ref_runtime_ms,
        cheat.integrity)


def test_a_thread_in_an_uninterruptible_populate_beside_the_baselines_gains_at_most_the_disturbed_margin():
    """A thread of the candidate's, woken after a run's last call, maps and zeroes 192 MiB in one
    MAP_POPULATE call on the reference sandbox's CPU: a signal stop takes it only on its way back to
    user space, so it runs beside the baselines while the process reads as stopped (its main thread's
    state T), and neither the ended-threads rule, the processes rule nor the per-run busy count sees
    it. What it gains is bounded by the baselines' rounds timed alone after the candidate
    (rounds._undisturbed: beside slower than alone by 15 % plus 3x the spread, the alone figure is
    used): ok at 0.087x against the honest 0.072-0.114x, no finding. No strict xfail: a thread aimed
    just under that margin gains at most that much."""
    honest, cheat = beside_honest("cheat_unstoppable_thread")
    no_gain(cheat, honest, 1.6)


def test_an_unread_scheduling_slice_and_unlisted_limits_on_the_siblings_are_named(own_tmp):
    """sched_setattr's EEVDF slice (0.1 ms on every thread of the reference and spare sandboxes and
    of the zygote) and seven resource limits procstate did not read (SIGPENDING, MSGQUEUE, RTPRIO,
    RTTIME, NICE, LOCKS, RSS) were set unseen: ok, no finding (no effect on the baselines measured on
    an idle 2-core box). procstate now reads every limit and sched_getattr's other fields; the
    candidate is turned down by sibling_tamper and the next honest one in fresh siblings is ok."""
    with isolated_judge(own_tmp.parent / "judge") as j:
        cheat = j.run("matmul_relu", "cheat_sched_attr_unseen")
        after = j.run("matmul_relu", "honest_matmul_relu")
    assert "sibling_tamper" in rules(cheat), (cheat.status, cheat.integrity)
    said = finding(cheat, "sibling_tamper").message
    assert "attr" in said and "RLIMIT_RTTIME" in said, said
    honest_ok(after)


def test_work_in_a_grandchild_reaped_by_a_helper_is_caught():
    """A grandchild forked per call by a lean exec'd helper and reaped by it left its time in the
    helper's children's time, which the judge read for the sandbox only: half of every product
    and ReLU there was ok at 0.21x against the honest 0.09x. Each process below the sandbox now
    counts with the children it waited for (proctree.cpu_with_reaped_ms)."""
    honest, cheat = beside_honest("cheat_grandchild_reaped")
    no_gain(cheat, honest, 1.3)


def test_a_swarm_of_threads_each_under_the_busy_bar_is_caught():
    """24 threads each under the busy bar did half of every call together on the second core (ok at
    0.16x against the honest 0.09x); the threads under the bar now count together as the cores
    their sum kept busy (channel.busy_threads)."""
    honest, cheat = beside_honest("cheat_thread_swarm")
    no_gain(cheat, honest, 1.3)
