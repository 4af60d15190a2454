"""The judge on a CUDA device (skipped without one): honest Triton passes; work the timing events
do not cover, caches keyed on the buffers every call reuses, and uninitialized outputs from the
caching allocator are caught."""

from __future__ import annotations

import statistics

import pytest

from cheats.caught import TIMING_RULES
from cheats.harness import finding, rules, run_check
from htam_engine.evaluate.result import Status

pytestmark = pytest.mark.gpu

# Large enough that the device, not the launch, sets a trial's time.
BIG = {"batch_size": 256, "dim": 65536}


def test_honest_triton_passes_on_cuda():
    r = run_check("relu", "honest_relu_triton", BIG, device="cuda", trials=20)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert r.device == "cuda" and r.runtime_ms > 0 and r.ref_runtime_ms > 0
    assert r.clock.candidate_overhead_ms <= r.clock.reference_overhead_ms + r.clock.margin_ms


def test_a_forward_slow_to_launch_is_timed_by_its_device_work():
    # 0.1 ms of host work before the launch, on top of the launch itself: with KernelBench's single
    # flush write (~0.055-0.09 ms) the device idled inside the events for the rest (timing.FLUSH_WRITES)
    plain = run_check("relu", "honest_relu_triton", BIG, device="cuda", trials=20)
    slow = run_check("relu", "honest_relu_triton_slow_launch", BIG, device="cuda", trials=20)
    assert plain.status is Status.OK and slow.status is Status.OK, (slow.diagnostics.message, slow.integrity)
    reported = {name: statistics.median(r.timings) for name, r in (("plain", plain), ("slow", slow))}
    assert reported["slow"] <= 1.2 * reported["plain"] + 0.01, reported


def test_side_stream_joined_before_returning_is_honest():
    r = run_check("relu", "honest_joined_stream", BIG, device="cuda", trials=20)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)


@pytest.mark.parametrize("candidate", ["cheat_side_stream", "cheat_side_stream_fast"])
def test_work_the_events_did_not_cover_is_rejected_by_the_judges_clock(candidate):
    r = run_check("relu", candidate, BIG, device="cuda", trials=20)
    assert r.status is Status.REJECTED, (r.diagnostics.message, r.integrity)
    assert "clock" in rules(r) or "side_stream" in rules(r), r.integrity
    if "clock" in rules(r):
        assert "ms" in finding(r, "clock").message


def test_device_work_the_candidate_keeps_up_between_its_calls_does_not_slow_its_baselines():
    # Its tree is stopped while the baselines are timed, and they are timed again once it is gone.
    # Or it is caught outright, and no baseline of its evaluation is reported to be slowed.
    honest = run_check("relu", "honest_relu_triton", BIG, device="cuda", trials=20)
    busy = run_check("relu", "cheat_gpu_background", BIG, device="cuda", trials=20)
    assert honest.status is Status.OK, honest.diagnostics.message
    if busy.status is Status.REJECTED:
        assert rules(busy) & {"side_stream", "background_thread", "clock", "harness_tamper"}, busy.integrity
        return
    assert busy.status is Status.OK, (busy.status, busy.diagnostics.message, busy.integrity)
    assert busy.ref_runtime_ms < 1.3 * honest.ref_runtime_ms, (honest.ref_spread, busy.ref_spread, busy.integrity)


def test_a_cache_keyed_on_the_reused_input_address_is_caught_on_cuda():
    r = run_check("relu", "cheat_cache_address_padded", BIG, device="cuda", trials=20)
    assert r.status is Status.REJECTED and "caching" in rules(r), (r.diagnostics.message, r.integrity)


@pytest.mark.parametrize("candidate,rule", [("cheat_empty_like", "uninitialized_memory"),
                                            ("cheat_partial_write", "uninitialized_memory"),
                                            ("cheat_cache_content", "caching"),
                                            ("cheat_decoy_kernel", "no_kernel"),
                                            ("cheat_low_precision", "lower_precision")])
def test_cpu_caught_cheats_are_caught_on_cuda_too(candidate, rule):
    r = run_check("relu", candidate, device="cuda")
    assert r.status in (Status.REJECTED, Status.INCORRECT), r.diagnostics.message
    assert rule in rules(r) or set(TIMING_RULES) & rules(r) or r.diagnostics.mismatch is not None, r.integrity
