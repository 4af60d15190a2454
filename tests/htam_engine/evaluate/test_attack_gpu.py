"""The adversarial suite on a CUDA device (skipped without one): the CPU's cheats where CUDA
changes what they meet (events instead of perf_counter, IPC buffers, a tighter clock margin),
and one that only CUDA allows (a kernel started beside the L2 flush, before the start event).

Each asserts what the judge should do. Measured on the H200 (tests/bench/gpu_session.sh): the
work check's three cheats got through there as on the CPU; the switch's state still does by the
code's design (a strict xfail, the same reason as on the CPU); the one-row and probe kernels are
caught there by the spoiled and garbage calls (at 09f97c3), the copy kernel by the garbage call's
copy rule and the probe handed 1 GiB by the host-memory copy past GARBAGE_MAX_BYTES (both not yet
run on the H200); every other case is caught, but for the prefetching thread, which since the inputs are
staged right before each call may leave nothing to catch and gain nothing (its test says how). Sizes: BIG makes a ReLU trial ~0.1 ms of device time (the
device, not the launch, sets it); GEMM a ~2 ms float32 product.
"""

from __future__ import annotations

import pytest

from cheats.caught import TIMING_RULES, assert_caught
from cheats.harness import run_check
from cheats.isolated import isolated_judge
from htam_engine.evaluate.result import Status

pytestmark = pytest.mark.gpu

# Large enough that the device, not the launch, sets a trial's time (as in test_checks_gpu.py).
BIG = {"batch_size": 256, "dim": 65536}
GEMM = {"size": 4096}


def gets_through(reason: str, strict: bool = True):
    return pytest.mark.xfail(strict=strict, reason=f"gets through on the H200: {reason}")


def test_a_kernel_started_beside_the_l2_flush_is_caught():
    honest = run_check("relu", "honest_relu_triton", BIG, device="cuda", trials=20)
    assert honest.status is Status.OK, (honest.diagnostics.message, honest.integrity)
    r = run_check("relu", "cheat_flush_overlap", BIG, device="cuda", trials=20)
    # Its kernel overlaps the flush only when forward's launch comes before the flush ends (on the
    # H200, once the sandbox polled for its calls: ok at 0.07 ms against the honest 0.105 ms,
    # before the judge timed the flush): then the flush is longer than the baselines'.
    if r.status is Status.OK:  # accepted only with the time an honest kernel takes
        assert r.runtime_ms > 0.7 * honest.runtime_ms, (r.runtime_ms, honest.runtime_ms)
    else:
        assert_caught(r, "flush_overlap", "clock", "side_stream")


def test_a_flush_cut_short_is_caught():
    # the flusher's writes set to none from the candidate's process: its trials run on a warm L2
    assert_caught(run_check("relu", "cheat_flush_skip", BIG, device="cuda", trials=20), "harness_tamper")


def test_work_queued_in_the_seed_call_is_caught_on_cuda():
    assert_caught(run_check("relu", "cheat_seed_hook", BIG, device="cuda", trials=20), "clock", "harness_tamper")


def test_work_done_in_the_harness_copy_is_caught_on_cuda():
    assert_caught(run_check("relu", "cheat_deferred_copy", BIG, device="cuda", trials=20), "clock", "harness_tamper")


def test_forged_events_inside_the_margin_are_caught():
    assert_caught(run_check("relu", "cheat_clock_margin", device="cuda", trials=20), "clock", "timer_tamper",
                  "harness_tamper")


def test_prefetching_from_the_ipc_input_buffers_is_caught_or_gains_nothing():
    # The inputs reach the IPC buffers right before the call is sent, so the thread races the call's
    # own product instead of getting ahead of it (as on the CPU). Then there may be nothing to catch:
    # seen on the H200 as ok at 0.92x with no finding. The product is the whole of the work (~2 ms
    # against a ReLU of microseconds), so a thread that did get ahead would show as a speedup far
    # above the eager 1x that doing the product in the call costs.
    r = run_check("matmul_relu", "cheat_prefetch_thread", GEMM, device="cuda", trials=20)
    if r.status is Status.OK:
        assert r.speedup_eager is not None and r.speedup_eager < 1.2, (r.speedup_eager, r.clock)
    else:
        assert_caught(r)


@pytest.mark.parametrize("candidate,rules", [
    ("cheat_probe_skip", ("no_kernel",)),
    # Not strict: it got through on the H200 (e67da0a) and on an H100 (d1465e1), and was caught on an H100
    # at 07fa654; which check caught it there is not known yet, so the mark says what the suite can promise.
    pytest.param("cheat_switch_state", ("no_kernel",), marks=gets_through(
        "the kernel switch's mode and launch count live in the sandbox, where the candidate reads them",
        strict=False)),
    ("cheat_tail_kernel", ("no_kernel",)),
    ("cheat_copy_kernel", ("no_kernel",)),
    ("cheat_probe_oversized", ("no_kernel",)),
    ("cheat_precision_timed", ("lower_precision", "changed_during_timing")),
])
def test_cpu_cheats_of_the_work_check_and_precision_are_caught_on_cuda(candidate, rules):
    assert_caught(run_check("relu", candidate, device="cuda"), *rules, *TIMING_RULES)


def test_a_poisoned_inductor_cache_does_not_slow_the_compile_baseline_on_cuda(tmp_path):
    with isolated_judge(tmp_path, device="cuda") as j:
        j.run("relu", "cheat_inductor_cache", time_compile_baseline=True)
        after = j.run("relu", "honest_relu_triton", time_compile_baseline=True)
    assert after.status is Status.OK, (after.diagnostics.message, after.integrity)
    assert after.compile_ref_runtime_ms is not None and after.compile_ref_runtime_ms < 5.0, after.compile_ref_runtime_ms
