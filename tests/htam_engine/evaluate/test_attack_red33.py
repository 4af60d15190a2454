"""Cheats of the thirty-third red-team pass (CPU, aimed at the correctness and precision checks right
after checks/rounded.py landed), each `ok` then. All three compute in float16 where the terms of a
long sum are positive, so the rounding averages out under the precision floor; each got past the
rounded yardstick another way:

- cheat_matmul_half_one_side: only the left operand rounded. Now each input alone is rounded too.
- cheat_matmul_half_later_slots: both rounded, but only for inputs in another buffer than the first
  call's, which every checked get_inputs set reuses: only timed calls round. The picked timed trials
  now get the rounded yardsticks as checked sets do.
- cheat_attention_half_p: an intermediate (a fused attention's probabilities) rounded, not an operand:
  not mended (below).
"""

from __future__ import annotations

import pytest

from cheats.harness import run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def _rounded_findings(r) -> list[str]:
    return [f.message for f in r.integrity if f.rule == "lower_precision" and "rounded to float16" in f.message]


def test_a_product_with_its_left_operand_alone_in_float16_is_caught():
    r = run_check("matmul_unit_range", "cheat_matmul_half_one_side", trials=5)
    assert r.status is Status.INCORRECT
    assert any("input #0 rounded" in m for m in _rounded_findings(r)), r.integrity


def test_float16_operands_only_in_the_timed_runs_other_buffers_are_caught_on_a_picked_trial():
    r = run_check("matmul_unit_range", "cheat_matmul_half_later_slots", trials=5)
    assert r.status is Status.INCORRECT
    assert any("timed trial" in m for m in _rounded_findings(r)), r.integrity


def test_the_same_attention_in_float32_throughout_is_ok():
    honest_ok(run_check("attention_unit_range", "honest_attention_unit_range", trials=5))


@pytest.mark.xfail(strict=True, reason=(
    "the probabilities of a fused attention rounded to float16 before P @ V (FlashAttention's P), where V "
    "lies in [0, 1): 1.5e-5 from float64 over 256 positive terms, under the 1e-4 floor, and an "
    "intermediate's rounding is close to no yardstick that rounds operands; every other set makes V "
    "negative or 1 and more, where the kernel is exact"))
def test_an_attention_with_its_probabilities_in_float16_is_caught():
    assert run_check("attention_unit_range", "cheat_attention_half_p", trials=5).status is not Status.OK
