"""Each integrity rule: a cheating candidate is caught, an honest one passes (CPU, Triton
through TRITON_INTERPRET=1, check_candidate in-process)."""

from __future__ import annotations

import pytest

from cheats.harness import rules, run_check
from htam_engine.evaluate.result import Status


def test_honest_triton_relu_passes_every_check():
    report = run_check("relu", "honest_relu_triton")
    assert report.status is Status.OK, report.message
    assert report.correct and report.mismatch is None
    assert [f for f in report.findings if f.severity != "warn"] == []
    assert report.timing_inputs and report.new_model is not None and report.ref_model is not None
