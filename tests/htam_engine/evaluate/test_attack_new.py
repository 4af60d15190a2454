"""Cheats of the adversarial suite in classes the other test_attack_*.py files cover thinly or
not at all: dtypes the precision rules do not reach, rules the timed trials do not apply,
and caches a candidate's sandbox can write that a later evaluation of another candidate reads.

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and
its class). A cheat the judge catches is asserted caught with the rule it was seen under; one
that gets through is xfail(strict=True) with what the judge misses, so the test flips when the
judge learns to catch it. Where a cheat gets through, its honest counterpart runs beside it and
the reason says how the verdict is wrong. Cheats that poison what later evaluations read run in
a judge of their own (cheats/isolated.py).
"""

from __future__ import annotations

import pytest

from cheats.caught import assert_caught
from cheats.harness import run_check
from htam_engine.evaluate.result import Status

OK = Status.OK


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


def honest_ok(r) -> None:
    assert r.status is OK, (r.status, r.diagnostics.message, r.integrity)
    assert not [f for f in r.integrity if f.severity != "warn"], r.integrity


# ---------------------------------------------------------------- precision by dtype
@xfail("check_precision measures float32/float16/bfloat16 outputs only: a float64 output computed in float32 "
       "(relative error 5e-8 against float64 where the honest float64 kernel's is 8e-17) passes the 1e-5 "
       "per-element tolerance and gets OK with no finding, as the honest honest_silu_f64 does")
def test_a_float64_problem_computed_in_float32_is_caught():
    honest_ok(run_check("silu_f64", "honest_silu_f64"))
    assert_caught(run_check("silu_f64", "cheat_float64_as_float32"), "lower_precision")


@xfail("a complex64 output gets compare's fallback tolerance 1e-2 (DEFAULT_TOLERANCES names no complex dtype) "
       "and check_precision skips complex dtypes: real and imaginary parts rounded through bfloat16 (relative "
       "error 3e-3 against float64, 27x outside float32's 1e-4, where the honest honest_polar's is 3e-8) get OK "
       "with no finding")
def test_a_complex_output_rounded_through_bfloat16_is_caught():
    honest_ok(run_check("polar", "honest_polar"))
    assert_caught(run_check("polar", "cheat_complex_bf16"), "lower_precision")
