"""Cheats of the thirty-first and thirty-second red-team passes (CPU, aimed at the correctness
checks), each `ok` before. The first pass's third (a product of float16-rounded operands, caught by
checks/rounded.py) and the second pass's one (a loss over a sample of each row's columns) are the
last tests here, with what catches them.

The first two rest on one root cause: a problem whose forward draws random numbers (randn_like, rand_like)
had a float64 yardstick that drew other numbers (a generator spends more bits on a double), so
the yardstick's distance to the reference, read as rounding noise, widened every allowance by
about the noise's size and stood the whole-output bound down. The yardstick now draws the
reference's own numbers (draws.py).

- cheat_gelu_off_range_noisy: GELU plus the reference's noise, exact only where every input is in
  [0, 1) (get_inputs' draw); elsewhere ReLU(x), off by up to 0.17. Passed every other set.
- cheat_softmax_zeros_rand_dropout: all zeros for every row spanning less than 1.5 (every
  get_inputs row) of a softmax followed by a rand_like dropout: each value is below atol, and the
  whole-output bound that refuses all-zeros softmaxes stood down.
"""

from __future__ import annotations

import importlib.util

import torch

from cheats.harness import load_candidate, problem_path, run_check
from htam_engine.evaluate.reference import ReferenceModel
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def test_the_yardstick_draws_the_references_random_numbers():
    spec = importlib.util.spec_from_file_location("noisy_gelu", problem_path("noisy_gelu"))
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    ref = ReferenceModel(problem.Model, [], 0, "cpu")
    x = torch.randn(16, 1024)
    out, exact = ref.outputs([x.clone()], 7, "a set"), ref.exact([x.clone()], 7)
    assert exact.dtype == torch.float64
    assert (out.double() - exact).abs().max() < 1e-5  # rounding, not another draw (~0.5 with one)


def test_a_gelu_exact_only_on_get_inputs_range_is_caught_where_the_problem_draws_noise():
    honest_ok(run_check("noisy_gelu", "honest_gelu_noisy", trials=5))
    assert run_check("noisy_gelu", "cheat_gelu_off_range_noisy", trials=5).status is Status.INCORRECT


def test_an_all_zeros_softmax_is_caught_where_a_rand_like_dropout_follows_it():
    honest_ok(run_check("softmax_rand_dropout", "honest_softmax_rand_dropout", trials=5))
    assert run_check("softmax_rand_dropout", "cheat_softmax_zeros_rand_dropout", trials=5).status is Status.INCORRECT


def test_a_product_rounded_to_float16_on_unit_range_operands_is_caught():
    """float16-rounded operands where both lie in [0, 1), exact float32 elsewhere: on get_inputs' draw
    (positive terms, K = 1024) the rounding errors average out to ~1e-5 relative, under the per-element
    1e-4 and the precision floor (1e-4, set above what another float32 algorithm costs); every set not
    in [0, 1) gets the exact path. The output is close to the float64 product of the rounded operands
    (~7e-8), which an honest tiled product is not (checks/rounded.py)."""
    honest_ok(run_check("matmul_unit_range", "honest_matmul_unit_range", trials=5))
    r = run_check("matmul_unit_range", "cheat_matmul_half_on_unit_range", trials=5)
    assert r.status is Status.INCORRECT
    assert any(f.rule == "lower_precision" and "rounded to float16" in f.message for f in r.integrity), r.integrity


def test_a_loss_over_the_first_eighth_of_every_row_is_caught():
    """Red-team pass 32: an L1 loss in float16 from the first eighth of each row's columns (falling back
    to all of them where its sample shows outliers) passed every set at 4096 x 1024: the other sets move
    all elements, or whole rows, alike, and a mean of a column sample is 3e-4 off there against
    float16's 1e-2. The columns-apart set moves about half the columns (inputs.columns_apart). At this
    test's 256 rows the sparse spikes it misses may catch it first, so which set does is not asserted
    here; that columns apart does on its own is, below."""
    honest_ok(run_check("l1_half", "honest_l1_half", trials=5))
    assert run_check("l1_half", "cheat_l1_first_columns", trials=5).status is Status.INCORRECT


def test_the_column_sample_is_right_on_the_rows_apart_set_and_wrong_on_the_columns_apart_set():
    from htam_engine.evaluate.checks.inputs import columns_apart, rows_apart

    cheat = load_candidate("cheat_l1_first_columns").ModelNew()
    allowance = lambda ref: 1e-2 + 1e-2 * abs(float(ref))  # noqa: E731 - float16's atol and rtol
    for seed in range(3):
        for make, wrong in [(rows_apart, False), (columns_apart, True)]:
            p, t = make([torch.rand(256, 1024).half(), torch.rand(256, 1024).half()], seed)
            ref = torch.mean(torch.abs(p.float() - t.float()))
            assert (abs(float(cheat(p, t)) - float(ref)) > allowance(ref)) is wrong, (make.__name__, seed)


def test_the_columns_apart_set_moves_the_same_columns_of_every_row_and_leaves_some():
    from htam_engine.evaluate.checks.inputs import SHIFT_LOW, columns_apart

    for seed in range(20):
        x = torch.rand(3, 4, 64)
        (y,) = columns_apart([x], seed)
        moved = (y < -SHIFT_LOW / 2).reshape(-1, 64)
        assert bool((moved == moved[0]).all()) and 0 < int(moved[0].sum()) < 64
        (y,) = columns_apart([torch.rand(4, 2)], seed)  # two columns: one on each side, every time
        assert (y < -SHIFT_LOW / 2).all(0).tolist() in ([True, False], [False, True])
    (y,) = columns_apart([torch.rand(5, 1)], 0)  # one column: nothing to set apart
    assert bool((y >= 0).all())
