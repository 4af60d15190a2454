"""Cheats of a twenty-fourth red-team pass (CPU, 45 minutes), aimed at telling checked calls from
timed ones, work moved off the clock and precision. Of its cheats one got through, mended since:
cheat_wide_window (below). The others were caught by background_thread (threads started with
threading), no_kernel (the global trace saw ATen on another thread during a call), caching (the
whole ReLU done ahead, no kernel in the call) and global_setting (a helper thread's work spilling
into the clocked run); a variant with 8,000 threads was caught the same way."""

from __future__ import annotations

from cheats.harness import run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def test_work_done_while_the_judge_reads_the_sandbox_before_its_clock_is_caught_or_gains_nothing():
    """3,000 idle threads made the judge's reads between the inputs and the Go last ~90 ms, and a
    helper thread did the product there: ok at 1.6-2.0x against the same code's honest 0.8x in 3
    of 5 runs. The inputs are now written after those reads, right before the Go; caught 4 of 4
    since (global_setting: the helper's product lands in the clocked run, on a second thread)."""
    honest = run_check("matmul_relu", "honest_matmul_relu_cpp", trials=30)
    honest_ok(honest)
    r = run_check("matmul_relu", "cheat_wide_window", trials=30)
    assert r.status is not Status.OK or r.speedup_eager <= 1.5 * honest.speedup_eager, \
        (r.status, r.speedup_eager, honest.speedup_eager, r.integrity)
