"""The judge's verdict for candidates that break rather than cheat, and for outputs that are
tuples with integer parts."""

from __future__ import annotations

from cheats.harness import finding, rules, run_check
from htam_engine.evaluate.result import Status


def test_forward_raising_is_a_runtime_error_naming_the_input_set():
    r = run_check("relu", "broken_raises")
    assert r.status is Status.RUNTIME_ERROR and not r.correct
    assert r.diagnostics.message.startswith("ModelNew.forward raised on get_inputs#0: ValueError: index 7")


def test_constructor_raising_is_a_runtime_error():
    r = run_check("relu", "broken_init")
    assert r.status is Status.RUNTIME_ERROR
    assert r.diagnostics.message == "ModelNew(*get_init_inputs()) raised: RuntimeError: weights file not found"


def test_raising_only_on_an_unseen_shape_is_incorrect_not_a_crash():
    r = run_check("relu", "broken_fixed_rows")
    assert r.status is Status.INCORRECT
    assert "shape_specialized" in rules(r)
    message = finding(r, "shape_specialized").message
    assert "this kernel handles 4 rows" in message and "batch_size" in message


def test_tuple_output_with_an_integer_part_passes_when_right():
    r = run_check("minmax", "honest_minmax")
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)


def test_unseen_shape_the_reference_rejects_too_is_skipped_not_blamed():
    # Zero columns: torch.max over an empty dimension raises in the reference as well.
    r = run_check("minmax", "honest_minmax", unseen={"cols": 0})
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    skipped = [f for f in r.integrity if f.rule == "unseen_shape_skipped"]
    assert skipped and skipped[0].severity == "warn" and "reference" in skipped[0].message


def test_random_ops_in_forward_compare_like_with_like():
    # Dropout in training mode: each call carries one seed, used by the sandbox and by the judge's
    # reference alike, so the same mask is drawn on both sides (timed trials included).
    r = run_check("relu_dropout", "honest_relu_dropout")
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)


def test_parameters_built_in_another_order_are_named():
    # Model's layers built in another order under the same seed draw other weights: the output is
    # wrong, and the finding says why.
    r = run_check("linear_pair", "broken_layer_order")
    assert r.status is Status.INCORRECT, (r.diagnostics.message, r.integrity)
    assert "same order under the same seed" in finding(r, "parameters_differ").message
