"""check_candidate's verdict for candidates that break rather than cheat, and for outputs
that are tuples with integer parts."""

from __future__ import annotations

from cheats.harness import rules, run_check
from htam_engine.evaluate.result import Status


def test_forward_raising_is_a_runtime_error_naming_the_input_set():
    report = run_check("relu", "broken_raises")
    assert report.status is Status.RUNTIME_ERROR and not report.correct
    assert report.message.startswith("ModelNew.forward raised on get_inputs#0: ValueError: index 7")


def test_constructor_raising_is_a_runtime_error():
    report = run_check("relu", "broken_init")
    assert report.status is Status.RUNTIME_ERROR
    assert "ModelNew(*get_init_inputs()) raised: RuntimeError: weights file not found" == report.message


def test_raising_only_on_an_unseen_shape_is_incorrect_not_a_crash():
    report = run_check("relu", "broken_fixed_rows")
    assert report.status is Status.INCORRECT
    assert "shape_specialized" in rules(report)
    finding = next(f for f in report.findings if f.rule == "shape_specialized")
    assert "this kernel handles 4 rows" in finding.message and "batch_size" in finding.message


def test_tuple_output_with_an_integer_part_passes_when_right():
    report = run_check("minmax", "honest_minmax")
    assert report.status is Status.OK, (report.message, report.findings)


def test_unseen_shape_the_reference_rejects_too_is_skipped_not_blamed():
    # Zero columns: torch.max over an empty dimension raises in the reference as well.
    report = run_check("minmax", "honest_minmax", unseen={"cols": 0})
    assert report.status is Status.OK, (report.message, report.findings)
    skipped = [f for f in report.findings if f.rule == "unseen_shape_skipped"]
    assert skipped and skipped[0].severity == "warn" and "reference" in skipped[0].message


def test_random_ops_in_forward_compare_like_with_like():
    # Dropout in training mode: each forward starts from the same random state, so the
    # same mask is drawn by reference and candidate (and by the uninitialized-memory rerun).
    report = run_check("relu_dropout", "honest_relu_dropout")
    assert report.status is Status.OK, (report.message, report.findings)
