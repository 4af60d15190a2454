"""The experiment's statistics on runs whose figures are known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htam_engine.experiment import Arm, ExperimentSpec, RunKey, RunRecord, Start, StepRow
from htam_engine.experiment.stats import (
    best_at, cluster_interval, paired, reference_best, steps_to_reach, summarize,
)

BUDGET = 6


def run(problem: str, arm: Arm, seed: int, bests: list[float | None], start: Start = Start.COLD) -> RunRecord:
    """A run whose best after step k is bests[k - 1]."""
    steps = [StepRow(step=k, direction="d", mode="argmax", template=None, code_hash=f"{problem}:{b}",
                     status="ok" if b else "failed", speedup=b, best=b) for k, b in enumerate(bests, start=1)]
    return RunRecord(key=RunKey(problem, arm, seed, start), family="elementwise", steps=steps)


def test_steps_to_reach_95_percent_of_the_best_any_run_found():
    fast = run("p", Arm.FULL, 0, [1.0, 1.9, 2.0, 2.0, 2.0, 2.0])
    slow = run("p", Arm.RANDOM, 0, [None, 1.0, 1.0, 1.0, 1.5, 1.5])
    assert reference_best([fast, slow], BUDGET) == {"p": 2.0}
    assert steps_to_reach(fast, 2.0, BUDGET) == 2  # 1.9 >= 0.95 x 2.0
    assert steps_to_reach(slow, 2.0, BUDGET) == BUDGET + 1  # never: the budget plus one
    assert steps_to_reach(run("p", Arm.FULL, 0, [2.0] * 8), 2.0, BUDGET) == 1
    short = run("p", Arm.FULL, 0, [1.0, 1.2])  # a run that stopped early keeps its last best
    assert short.best_after(6) == 1.2 and steps_to_reach(short, 2.0, BUDGET) == BUDGET + 1


def test_best_at_k_counts_no_correct_kernel_yet_as_one():
    r = run("p", Arm.FULL, 0, [None, None, 0.8, 1.4, 1.4, 1.4])
    assert [best_at(r, k) for k in (1, 3, 6)] == [1.0, 0.8, 1.4]


def test_cluster_interval_resamples_problems_not_runs():
    assert cluster_interval([], np.median).value is None
    one = cluster_interval([np.array([3.0, 3.0, 3.0])], np.median)
    assert (one.value, one.low, one.high) == (3.0, None, None)  # one problem: no interval
    same = cluster_interval([np.array([2.0, 2.0])] * 5, np.median)
    assert (same.value, same.low, same.high) == (2.0, 2.0, 2.0)
    spread = cluster_interval([np.array([v, v, v]) for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)], np.mean)
    assert spread.value == 4.0 and 1.0 <= spread.low < 4.0 < spread.high <= 7.0
    # three identical seeds of one problem are one sample, not three: the interval is as wide
    # as for one seed per problem
    single = cluster_interval([np.array([v]) for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)], np.mean)
    assert (spread.low, spread.high) == pytest.approx((single.low, single.high), abs=0.3)


def test_paired_comparison_on_known_differences():
    ref = {(f"p{i}", s): 2.0 for i in range(10) for s in range(3)}
    other = {k: 5.0 for k in ref}
    other[("p0", 0)] = 1.0  # one pair the other side wins
    p = paired(ref, other)
    assert p.pairs == 30 and (p.reference_better, p.other_better, p.ties) == (29, 1, 0)
    assert p.mean_delta.value == pytest.approx((29 * 3 - 1) / 30)
    assert p.mean_delta.low > 0  # the interval excludes no difference
    assert p.p_value < 0.01
    assert p.cut == pytest.approx(1 - 2.0 / np.mean(list(other.values())))
    tied = paired(ref, dict(ref))
    assert (tied.p_value, tied.cut, tied.ties) == (1.0, 0.0, 30)
    assert paired(ref, {("elsewhere", 0): 1.0}) is None


def test_summary_per_arm_and_the_transfer_from_a_warm_bank():
    spec = ExperimentSpec(test=[f"p{i}" for i in range(8)], bank=["b"], arms=[Arm.FULL, Arm.RANDOM], seeds=[0, 1])
    records = []
    for i in range(8):
        for s in (0, 1):
            records += [
                run(f"p{i}", Arm.FULL, s, [1.0, 2.0, 2.0, 2.0, 2.0, 2.0], Start.COLD),  # 2 steps
                run(f"p{i}", Arm.RANDOM, s, [1.0, 1.0, 1.0, 1.0, 2.0, 2.0], Start.COLD),  # 5 steps
                run(f"p{i}", Arm.FULL, s, [2.0] * 6, Start.WARM),  # 1 step
                run(f"p{i}", Arm.RANDOM, s, [None] * 6, Start.WARM),  # never: 7, and no correct kernel
            ]
    records.append(RunRecord(key=RunKey("p0", Arm.FULL, 9, Start.COLD), family="x", steps=[], error="boom"))
    summary = summarize(spec, records)
    rows = {(r.start, r.arm): r for r in summary.rows}
    cold_full, cold_random = rows[(Start.COLD, Arm.FULL)], rows[(Start.COLD, Arm.RANDOM)]
    assert cold_full.steps_median.value == 2 and cold_random.steps_median.value == 5
    assert cold_random.vs_full.mean_delta.value == 3 and cold_random.vs_full.cut == pytest.approx(1 - 2 / 5)
    assert cold_full.vs_full is None and cold_full.correct_rate == 1.0
    assert rows[(Start.WARM, Arm.RANDOM)].correct_rate == 0.0
    assert rows[(Start.WARM, Arm.RANDOM)].steps_mean == BUDGET + 1
    assert cold_random.best_at[3].value == pytest.approx(1.0) and cold_random.best_at[6].value == pytest.approx(2.0)
    assert summary.transfer[Arm.FULL].mean_delta.value == 1  # cold 2 steps, warm 1
    assert summary.transfer[Arm.FULL].cut == pytest.approx(0.5)
    assert (summary.runs, summary.errors) == (len(records), 1)
    assert summary.reference == {f"p{i}": 2.0 for i in range(8)} and summary.unsolved == []
    assert summary.distinct_candidates == len({(r.key.problem, s.code_hash) for r in records for s in r.steps})
    assert all(math.isfinite(r.best_at[6].value) for r in summary.rows)
