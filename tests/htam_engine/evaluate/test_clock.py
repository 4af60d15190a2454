"""The judge's rules on a sandbox's reported times (clock.py), on figures as a sandbox reports them."""

from __future__ import annotations

from htam_engine.evaluate.clock import TAIL_FLOOR_MS, tail_check


def test_gpu_work_left_running_past_the_end_event_is_named():
    # tails as timing.run_trial measures them: an honest forward's is the synchronize's latency,
    # the same as the baselines'; work on an unjoined stream adds what it still had to do
    baselines = [0.006, 0.007, 0.006, 0.008, 0.007, 0.006]
    honest = [0.007, 0.006, 0.009, 0.007, 0.006, 0.007]
    hidden = [0.006 + 0.05] * 5 + [0.007]
    assert tail_check(honest, baselines) is None
    message = tail_check(hidden, baselines)
    assert message is not None and "0.056 ms past the end event" in message


def test_one_slow_synchronize_is_not_a_hidden_stream():
    # the host was descheduled once after the end event: the median does not move
    baselines = [0.006] * 6
    assert tail_check([0.006, 0.006, 2.5, 0.006, 0.007, 0.006], baselines) is None


def test_the_bound_grows_with_the_baselines_own_noise():
    noisy = [0.005, 0.02, 0.008, 0.03, 0.006, 0.025]
    just_over_floor = [0.008 + TAIL_FLOOR_MS + 0.002] * 6
    assert tail_check(just_over_floor, [0.008] * 6) is not None
    assert tail_check(just_over_floor, noisy) is None


def test_no_figures_no_finding():
    assert tail_check([], [0.006]) is None and tail_check([0.5], []) is None
    assert tail_check([0.0] * 5, [0.0] * 5) is None  # the CPU: no tails
