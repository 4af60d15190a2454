"""How the timed rounds are cut into runs of calls (rounds.py): small sets back to back, large
ones a call at a time, warm-up and timed calls never in one run, and the work check's run on
garbage in the place of a timed run drawn at random."""

from __future__ import annotations

import collections

from htam_engine.evaluate import rounds
from htam_engine.evaluate.rounds import (RUN_MAX_BYTES, TRIALS_PER_RUN, garbage_place, runs_of, timed_stage_runs,
                                         trials_per_run)

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


def test_the_run_on_garbage_takes_any_place_among_the_timed_runs_alike():
    """Every place from before the first timed run to after the last comes, each about as often:
    after the last (where a candidate letting PyTorch do every timed run but the last escapes) one
    draw in timed_runs + 1."""
    for timed_runs in (1, 6):
        draws = 7000
        seen = collections.Counter(garbage_place(timed_runs) for _ in range(draws))
        assert set(seen) == set(range(timed_runs + 1)), seen
        expected = draws / (timed_runs + 1)
        assert all(abs(n - expected) < 6 * expected ** 0.5 for n in seen.values()), seen  # ~6 sigma


def test_the_run_on_garbage_is_one_run_more_among_the_timed_runs_never_among_the_warm_ups(monkeypatch):
    warmup, trials, per = 3, 12, 5
    warm, timed = [[0, 1, 2]], [[3, 4, 5, 6, 7], [8, 9, 10, 11, 12], [13, 14]]
    for place in range(len(timed) + 1):
        monkeypatch.setattr(rounds, "garbage_place", lambda timed_runs, place=place: place)
        runs = timed_stage_runs(warmup, trials, per)
        assert [None if r is None else list(r) for r in runs] == warm + timed[:place] + [None] + timed[place:]
    # the defaults' 3 warm-up calls and 30 trials in runs of 5: the run on garbage last in one draw in 7
    monkeypatch.undo()
    lasts = sum(timed_stage_runs(3, 30, 5)[-1] is None for _ in range(7000))
    assert abs(lasts - 1000) < 6 * 1000 ** 0.5, lasts


def test_a_candidate_wrong_on_a_set_first_seen_within_a_run_is_called_wrong_not_phase_detecting():
    """wrong_on_some_spikes_softmax is wrong on some sparse-spikes inputs, whatever the call: where its
    single checked call of that kind was right and a run's call was not, the same set given again as a
    call of its own is wrong too, so the verdict is INCORRECT on those inputs, never the rejection of a
    candidate that behaved differently once timed. Five evaluations: before _alone_again, about one in
    two ended rejected. (Where every sparse-spikes set the judge drew happened to be one it gets right,
    about one evaluation in 40, it is ok: nothing it was handed showed it wrong.)"""
    from cheats.harness import run_check
    from htam_engine.evaluate.result import Status

    verdicts = [run_check("softmax", "wrong_on_some_spikes_softmax") for _ in range(5)]
    seen = [(r.status, r.diagnostics.message) for r in verdicts]
    assert all(r.status in (Status.INCORRECT, Status.OK) for r in verdicts), seen
    wrong = [r for r in verdicts if r.status is Status.INCORRECT]
    assert wrong and all("sparse spikes" in r.diagnostics.message for r in wrong), seen
