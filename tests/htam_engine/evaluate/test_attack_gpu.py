"""The adversarial suite on a CUDA device (skipped without one): the CPU's cheats where CUDA
changes what they meet (events instead of perf_counter, IPC buffers, a tighter clock margin),
and one that only CUDA allows (a kernel started beside the L2 flush, before the start event).

Each asserts what the judge should do. These were written without a GPU to run them on, so what
gets through today is a reading of the code, not a measurement: each is marked
xfail(strict=False) with what is expected to get through, so a run reports XPASS for the ones
the judge already catches and XFAIL for the ones it misses; once measured, an XFAIL becomes
strict and an XPASS loses its mark. Sizes: BIG makes a ReLU trial ~0.1 ms of device time (the
device, not the launch, sets it); GEMM a ~2 ms float32 product.
"""

from __future__ import annotations

import pytest

from cheats.caught import assert_caught
from cheats.harness import run_check
from cheats.isolated import isolated_judge
from htam_engine.evaluate.result import Status

pytestmark = pytest.mark.gpu

# Large enough that the device, not the launch, sets a trial's time (as in test_checks_gpu.py).
BIG = {"batch_size": 256, "dim": 65536}
GEMM = {"size": 4096}


def expected_to_pass(reason: str):
    return pytest.mark.xfail(strict=False, reason=f"expected to get through on CUDA today: {reason}")


@expected_to_pass("the start event is recorded after the L2 flush is queued but before it ran; a kernel on "
                  "a stream that does not wait for the current one runs beside the flush, unmeasured")
def test_a_kernel_started_beside_the_l2_flush_is_caught():
    honest = run_check("relu", "honest_relu_triton", BIG, device="cuda", trials=20)
    assert honest.status is Status.OK, (honest.diagnostics.message, honest.integrity)
    r = run_check("relu", "cheat_flush_overlap", BIG, device="cuda", trials=20)
    if r.status is Status.OK:  # accepted only with the time an honest kernel takes
        assert r.runtime_ms > 0.7 * honest.runtime_ms, (r.runtime_ms, honest.runtime_ms)
    else:
        assert_caught(r)


@expected_to_pass("work queued in the unguarded torch.manual_seed hook runs before the events; the judge's "
                  "wall clock sees it, within 20 us + 5 % + 3 IQR of the reference's overhead")
def test_work_queued_in_the_seed_call_is_caught_on_cuda():
    assert_caught(run_check("relu", "cheat_seed_hook", BIG, device="cuda", trials=20), "clock", "harness_tamper")


@expected_to_pass("the kernel runs in the sandbox's copy of the output (a TorchFunctionMode), after the end "
                  "event, inside the clock check's margin")
def test_work_done_in_the_harness_copy_is_caught_on_cuda():
    assert_caught(run_check("relu", "cheat_deferred_copy", BIG, device="cuda", trials=20), "clock", "harness_tamper")


@expected_to_pass("events forged 100x fast (a subclass put in timing._Event, guards silenced): a launch-bound "
                  "kernel is faster than the clock check's margin")
def test_forged_events_inside_the_margin_are_caught():
    assert_caught(run_check("relu", "cheat_clock_margin", device="cuda", trials=20), "clock", "timer_tamper",
                  "harness_tamper")


@expected_to_pass("a thread watching the IPC input buffers computes the product while the judge computes "
                  "its reference; forward only applies the ReLU")
def test_prefetching_from_the_ipc_input_buffers_is_caught():
    assert_caught(run_check("matmul_relu", "cheat_prefetch_thread", GEMM, device="cuda", trials=20))


@pytest.mark.parametrize("candidate,rules", [
    ("cheat_probe_skip", ("no_kernel",)),
    ("cheat_switch_state", ("no_kernel",)),
    ("cheat_tail_kernel", ("no_kernel",)),
    ("cheat_precision_timed", ("lower_precision", "changed_during_timing")),
])
@expected_to_pass("the same sandbox-side switch, launch count and check sequence as on the CPU")
def test_cpu_cheats_of_the_work_check_and_precision_are_caught_on_cuda(candidate, rules):
    assert_caught(run_check("relu", candidate, device="cuda"), *rules)


@expected_to_pass("inductor's cache of generated modules is shared by the user's processes and loaded as found")
def test_a_poisoned_inductor_cache_does_not_slow_the_compile_baseline_on_cuda(tmp_path):
    with isolated_judge(tmp_path, device="cuda") as j:
        j.run("relu", "cheat_inductor_cache", time_compile_baseline=True)
        after = j.run("relu", "honest_relu_triton", time_compile_baseline=True)
    assert after.status is Status.OK, (after.diagnostics.message, after.integrity)
    assert after.compile_ref_runtime_ms is not None and after.compile_ref_runtime_ms < 5.0, after.compile_ref_runtime_ms
