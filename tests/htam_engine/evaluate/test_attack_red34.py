"""Cheats of the thirty-fourth red-team pass (CPU, 20 minutes, aimed at integer problems): int64
values compared after a conversion to float32, exact below 2^24. Both are `ok` and not mended.

get_inputs draws small integers (exact in float32). The wide-integer sets spread values over every
bit length up to 2^62 and the sparse one puts a few wide values among small ones: two values that meet
in a comparison (x against y, a row's two largest) then almost never agree to float32's 24 bits.
Values near a large base (timestamps, ids, offsets) would: the helper measured 256 of 256 rows of
the argmax and half the elements of the maximum wrong on 1.7e18 + randint(0, 1e9), and the judge's
own wide sets found nothing in 20 seeds. A set of integers near a common large base would catch both.
"""

from __future__ import annotations

import pytest

from cheats.harness import run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok

CASES = [("argmax_int64", "cheat_argmax_int64_float32_keys", "honest_argmax_int64"),
         ("maximum_int64", "cheat_maximum_int64_float32_compare", "honest_maximum_int64")]


@pytest.mark.parametrize("problem, cheat, honest", CASES)
def test_the_honest_int64_comparison_is_ok(problem, cheat, honest):
    honest_ok(run_check(problem, honest, trials=5))


@pytest.mark.xfail(strict=True, reason=(
    "int64 compared as float32: exact on get_inputs' small values and on the wide-integer sets (values that "
    "meet almost never agree to 24 bits there); no set puts large values close together"))
@pytest.mark.parametrize("problem, cheat, honest", CASES)
def test_an_int64_comparison_made_in_float32_is_caught(problem, cheat, honest):
    assert run_check(problem, cheat, trials=5).status is not Status.OK
