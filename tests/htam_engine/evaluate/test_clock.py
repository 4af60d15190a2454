"""The judge's rules on a sandbox's reported times (clock.py), on figures as a sandbox reports them."""

from __future__ import annotations

from htam_engine.evaluate.clock import (FLUSH_FLOOR_MS, FLUSH_FRACTION, TAIL_FLOOR_MS, TAIL_FRACTION, flush_check,
                                        fresh_memory_check, fresh_pages_check, short_flush_check,
                                        tail_check)
from htam_engine.evaluate.timing import FLUSH_WRITES


def test_gpu_work_left_running_past_the_end_event_is_named():
    # tails as timing.run_trial measures them: an honest forward's is the synchronize's latency,
    # the same as the baselines'; work on an unjoined stream adds what it still had to do
    baselines = [0.006, 0.007, 0.006, 0.008, 0.007, 0.006]
    honest = [0.007, 0.006, 0.009, 0.007, 0.006, 0.007]
    hidden = [0.006 + 0.05] * 5 + [0.007]
    assert tail_check(honest, baselines) is None
    message = tail_check(hidden, baselines)
    assert message is not None and "0.056 ms past the end event" in message


def test_work_run_beside_the_l2_flush_is_named():
    # flushes as timing.run_trial measures them (FLUSH_WRITES of the H200's 256 MB fill, ~0.065 ms
    # each); a kernel started on a stream that does not wait for the current one shares the device
    # with the flush and lengthens it by the part it ran there, which the events that start after it
    # never see
    one = 0.065
    baselines = [x * FLUSH_WRITES for x in (0.065, 0.066, 0.064, 0.065, 0.067, 0.065)]
    honest = [x * FLUSH_WRITES for x in (0.066, 0.065, 0.065, 0.068, 0.064, 0.066)]
    beside = [one * FLUSH_WRITES + 0.03] * 5 + [0.066 * FLUSH_WRITES]
    assert flush_check(honest, baselines) is None
    message = flush_check(beside, baselines)
    assert message is not None and f"{one * FLUSH_WRITES + 0.03:.4g} ms" in message
    assert "before the events began timing" in message
    # within the bound: the baselines' median, a share of one write (the same bound in ms however
    # many writes the flush is) and the floor
    flush = one * FLUSH_WRITES
    edge = flush + FLUSH_FRACTION * one + FLUSH_FLOOR_MS
    assert flush_check([edge - 0.0005] * 6, [flush] * 6) is None
    assert flush_check([edge + 0.0005] * 6, [flush] * 6) is not None
    # on the CPU there is no flush: both report 0
    assert flush_check([0.0] * 6, [0.0] * 6) is None


def test_a_flush_cut_short_in_the_candidates_process_is_named():
    # the flush is the harness's object in the candidate's process: its buffer swapped for a small one
    # or its writes cut to none leaves the trials an L2 the flush did not clear
    baselines = [x * FLUSH_WRITES for x in (0.065, 0.066, 0.064, 0.065, 0.067, 0.065)]
    honest = [x * FLUSH_WRITES for x in (0.064, 0.063, 0.065, 0.064, 0.066, 0.064)]
    assert short_flush_check(honest, baselines) is None
    for cut in ([0.002] * 6, [0.065] * 6):  # no write (the two events back to back); one write of four
        message = short_flush_check(cut, baselines)
        assert message is not None and "cut short" in message
    assert short_flush_check([0.0] * 6, [0.0] * 6) is None  # the CPU: no flush either side


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


def test_a_long_trial_may_have_a_longer_synchronize_but_a_short_one_may_not():
    # the H200's figures: 0.13 ms after a 10 ms trial with a joined side stream, 0.018 ms after 0.09 ms
    baselines = [0.018, 0.017, 0.019, 0.018, 0.018, 0.02]
    after_long = [0.13, 0.12, 0.14, 0.13, 0.13, 0.125]
    assert tail_check(after_long, baselines, trial_ms=10.25) is None
    assert tail_check(after_long, baselines, trial_ms=0.05) is not None
    assert TAIL_FRACTION * 0.05 < 0.01  # the side-stream cheats report next to nothing


def test_two_sandboxes_honest_overheads_on_a_gpu_differ_without_a_finding():
    from htam_engine.evaluate.clock import clock_check

    # the H200's figures from an honest Triton kernel timed twice: (judge wall ms, reported ms)
    candidate = [(0.1616 + 2.05, 0.1616), (0.2060 + 2.13, 0.2060)]
    reference = [(0.1052 + 1.85, 0.1052), (0.1150 + 1.88, 0.1150)]
    figures, message = clock_check("cuda", candidate, reference, floor_ms=1e-5)
    assert message is None, message
    assert 0.2 < figures.candidate_overhead_ms - figures.reference_overhead_ms < figures.margin_ms
    # a millisecond and a half of work the reported time left out is still named
    forged = [(w + 1.5, r) for w, r in candidate]
    assert "beyond the reported time" in clock_check("cuda", forged, reference, floor_ms=1e-5)[1]


def _snapshots(spent_ms: float, live_ms: float, tick_ms: float):
    from htam_engine.evaluate.clock import CpuSnapshot

    return (CpuSnapshot(1000.0, tick_ms, {"1": 0}),
            CpuSnapshot(1000.0 + spent_ms, tick_ms, {"1": int(live_ms * 1e6)}))


def test_cpu_time_of_threads_that_ended_within_the_trials_is_named():
    from htam_engine.evaluate.clock import hidden_cpu_check

    # as measured with the process's nanosecond CPU clock on this CPU (matmul_relu, 10 trials):
    # an honest candidate's live threads account for all of it; half the product on a thread
    # started and joined inside forward left 55-200 ms of 300-450 unaccounted
    assert hidden_cpu_check(*_snapshots(300.0, 300.0, 0.0)) is None
    message = hidden_cpu_check(*_snapshots(300.0, 245.0, 0.0))
    assert message is not None and "ran 55 ms of the sandbox's 300 ms" in message


def test_the_floor_for_ended_threads_grows_with_the_process_clocks_tick():
    from htam_engine.evaluate.clock import hidden_cpu_check

    # /proc stat's 10 ms tick, read twice, can be 40 ms off what the live threads' ns account for
    assert hidden_cpu_check(*_snapshots(300.0, 260.0, 10.0)) is None
    assert hidden_cpu_check(*_snapshots(300.0, 240.0, 10.0)) is not None
    assert hidden_cpu_check(*_snapshots(150.0, 140.0, 0.0)) is not None  # 10 ms: past 5 ms and 5 % (7.5 ms)


def test_a_snapshot_unreadable_at_either_end_names_nothing():
    from htam_engine.evaluate.clock import CpuSnapshot, hidden_cpu_check

    before, after = _snapshots(300.0, 100.0, 0.0)
    assert hidden_cpu_check(CpuSnapshot(None, 0.0, before.threads_ns), after) is None
    assert hidden_cpu_check(before, CpuSnapshot(after.process_ms, 0.0, None)) is None


def test_cpu_time_of_processes_of_the_sandboxs_own_is_named():
    from htam_engine.evaluate.clock import CpuSnapshot, hidden_cpu_check

    def snaps(waited_ms: float, below_before: dict, below_after: dict):
        return (CpuSnapshot(1000.0, 0.0, {"1": 0}, 500.0, below_before),
                CpuSnapshot(1300.0, 0.0, {"1": int(300e6)}, 500.0 + waited_ms, below_after))

    # an honest candidate: no child, nothing below
    assert hidden_cpu_check(*snaps(0.0, {}, {})) is None
    # half the product in children forked and waited for inside forward (110 ms on matmul_relu)
    message = hidden_cpu_check(*snaps(110.0, {}, {}))
    assert message is not None and "110 ms in children it waited for" in message
    # a helper below the sandbox since the model was built (40 ms over the trials)
    message = hidden_cpu_check(*snaps(0.0, {77: 5.0}, {77: 45.0}))
    assert message is not None and "40 ms in processes still below it" in message
    # an idle compile pool below it: within the floor of two ticks
    assert hidden_cpu_check(*snaps(0.0, {77: 5.0, 78: 9.0}, {77: 15.0, 78: 9.0})) is None
    # processes started within the trials and left as zombies, whose time no one counted
    message = hidden_cpu_check(*snaps(0.0, {}, {81: 0.0, 82: 0.0}))
    assert message is not None and "2 process(es) started within the timed trials" in message


def test_timed_calls_that_took_no_page_faults_for_fresh_outputs_are_named():
    """A 2 MiB output: the eager baseline's calls fault each of its 512 pages in; a ring of outputs, or
    pages touched before the call, takes none (the sandboxes' figures on the 2-core box)."""
    fresh = 2 << 20
    assert fresh_pages_check([513.0, 513.0], [513.2, 513.8], fresh) is None  # honest_relu_cpp
    assert fresh_pages_check([1051.6, 513.0], [517.8, 513.2], fresh) is None  # its first run faulted more
    message = fresh_pages_check([0.0, 1.2], [517.8, 513.2], fresh)  # cheat_output_ring_unrecorded_cpp
    assert message and "2 of 2 timed runs" in message and "512" in message
    # a quarter of the runs suffices: the warm-up's pre-touch missed the first run only
    assert "1 of 2 timed runs took at most 0 page faults" in fresh_pages_check([538.6, 0.0], [1056.0, 524.2], fresh)


def test_the_honest_figure_is_the_baselines_own_at_most_a_fault_a_page():
    """Huge pages map 2 MiB a fault: the baseline's own count is the yardstick. Its temporaries fault
    too, but a fused forward need not: at most one fault a page of the outputs is asked for."""
    assert fresh_pages_check([16.0] * 4, [32.0] * 4, 64 << 20) is None  # huge pages, candidate at half
    assert fresh_pages_check([2.0] * 4, [32.0] * 4, 64 << 20)
    assert fresh_pages_check([16384.0] * 4, [32770.0] * 4, 64 << 20) is None  # the baseline's temporary too


def test_no_fresh_outputs_or_no_faulting_baseline_names_nothing():
    assert fresh_pages_check([0.0] * 4, [513.0] * 4, 0) is None  # no output past the threshold
    assert fresh_pages_check([0.0] * 4, [3.0] * 4, 2 << 20) is None  # the baseline's outputs came unfaulted
    assert fresh_pages_check([None] * 4, [513.0] * 4, 2 << 20) is None  # not counted (a GPU)
    assert fresh_pages_check([0.0] * 4, [], 2 << 20) is None  # no baseline timed


MIB = 1 << 20


def test_timed_calls_whose_outputs_grew_no_memory_are_named():
    """Page faults can be taken without allocating (the zero page, a memfd's pages mapped anew: red-team
    pass 21); the sandbox's anonymous memory grows only by pages allocated and zeroed. On the 2-core
    box two reads may be 512 KiB off."""
    slack = 512 << 10
    assert fresh_memory_check([2.0 * MIB, 2.0 * MIB], [2.0 * MIB, 2.25 * MIB], 2 * MIB, slack) is None  # honest
    message = fresh_memory_check([0.0, 0.0], [2.0 * MIB, 2.0 * MIB], 2 * MIB, slack)  # cheat_prefault_read_touch
    assert message and "2 of 2 timed runs grew" in message and "by 2.00 MiB" in message
    assert fresh_memory_check([1.5 * MIB, 0.0], [2.0 * MIB] * 2, 2 * MIB, slack)  # a quarter of the runs suffices
    # a fused forward need not make the baseline's temporaries: at most the outputs' bytes are asked for
    assert fresh_memory_check([2.0 * MIB] * 4, [6.0 * MIB] * 4, 2 * MIB, slack) is None


def test_outputs_within_what_two_reads_may_be_off_by_name_nothing():
    """On 16 cores two reads may be 4 MiB off: a 2 MiB output is left to the fault count there."""
    assert fresh_memory_check([0.0] * 4, [2.0 * MIB] * 4, 2 * MIB, 4 * MIB) is None
    assert fresh_memory_check([0.0] * 4, [16.0 * MIB] * 4, 16 * MIB, 4 * MIB)
    assert fresh_memory_check([None] * 4, [2.0 * MIB] * 4, 2 * MIB, 0) is None  # not read (a GPU)
