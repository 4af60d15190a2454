"""What "caught" means for the adversarial suite's tests (test_attack_*.py)."""

from __future__ import annotations

from typing import Any

from htam_engine.evaluate.result import Status

CAUGHT_STATUSES = (Status.REJECTED, Status.INCORRECT)

# The timing stage's rules, which the judge applies before the work check: on a GPU shared by a
# parallel test run, the judge's clock or the tail after the end event can turn a work-check cheat
# down first (seen on the H200 for cheat_decoy_kernel and cheat_copy_kernel under xdist).
TIMING_RULES = ("clock", "side_stream")


def assert_caught(r: Any, *expected_rules: str) -> None:
    """Turned down (no verdict, no speedup), naming what it saw: a reject or incorrect finding,
    one of `expected_rules` when any are given, or a mismatch."""
    assert r.status in CAUGHT_STATUSES, (r.status, r.speedup_eager, r.diagnostics.message, r.integrity)
    assert not r.correct and r.speedup_eager is None and r.runtime_ms is None
    named = {f.rule for f in r.integrity if f.severity != "warn"}
    if expected_rules:
        assert named & set(expected_rules), r.integrity
    else:
        assert named or r.diagnostics.mismatch is not None, r.integrity
    assert r.diagnostics.message
