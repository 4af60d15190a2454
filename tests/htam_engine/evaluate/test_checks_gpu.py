"""The checks on a CUDA device (skipped without one): honest Triton passes; work left on a
side stream and uninitialized outputs from the caching allocator are caught."""

from __future__ import annotations

import pytest

from cheats.harness import rules, run_check
from htam_engine.evaluate.result import Status

pytestmark = pytest.mark.gpu


def test_honest_triton_passes_on_cuda():
    report = run_check("relu", "honest_relu_triton", device="cuda")
    assert report.status is Status.OK, (report.message, report.findings)
    assert report.timing_inputs[0].is_cuda


def test_side_stream_joined_before_returning_is_honest():
    report = run_check("relu", "honest_joined_stream", device="cuda")
    assert report.status is Status.OK, (report.message, report.findings)


def test_side_stream_work_left_running_is_rejected():
    report = run_check("relu", "cheat_side_stream", device="cuda")
    assert report.status is Status.REJECTED, (report.message, report.findings)
    assert "side_stream" in rules(report)


@pytest.mark.parametrize("candidate,rule", [("cheat_empty_like", "uninitialized_memory"),
                                            ("cheat_partial_write", "uninitialized_memory"),
                                            ("cheat_cache_content", "caching"),
                                            ("cheat_low_precision", "lower_precision")])
def test_cpu_caught_cheats_are_caught_on_cuda_too(candidate, rule):
    report = run_check("relu", candidate, device="cuda")
    assert report.status in (Status.REJECTED, Status.INCORRECT), report.message
    assert rule in rules(report) or report.mismatch is not None, report.findings
