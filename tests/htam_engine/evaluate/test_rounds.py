"""How the timed rounds are cut into runs of calls (rounds.py): small sets back to back, large
ones a call at a time, warm-up and timed calls never in one run."""

from __future__ import annotations

from htam_engine.evaluate.rounds import RUN_MAX_BYTES, TRIALS_PER_RUN, runs_of, trials_per_run

MIB = 1 << 20


def test_small_sets_run_back_to_back_and_large_ones_alone():
    assert trials_per_run(4 * MIB, 4 * MIB, trials=30) == TRIALS_PER_RUN
    assert trials_per_run(4 * MIB, 4 * MIB, trials=3) == 3  # never more calls than trials
    assert trials_per_run(RUN_MAX_BYTES // 2, RUN_MAX_BYTES // 4, trials=30) == 1  # 1/94's 8 GiB: one at a time
    assert trials_per_run(RUN_MAX_BYTES // 4 - MIB, MIB, trials=30) == 4  # as many as fit the bound
    assert trials_per_run(0, 0, trials=30) == TRIALS_PER_RUN


def test_runs_cover_every_round_once_in_order():
    warmup, trials, per = 3, 12, 5
    runs = runs_of(0, warmup, per) + runs_of(warmup, trials, per)
    assert [list(r) for r in runs] == [[0, 1, 2], [3, 4, 5, 6, 7], [8, 9, 10, 11, 12], [13, 14]]
    assert all(max(r) < warmup or min(r) >= warmup for r in runs)  # a warm-up run holds no timed call
    assert runs_of(0, 0, per) == []
