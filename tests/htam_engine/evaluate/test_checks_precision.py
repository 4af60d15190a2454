"""check_precision and the complex-aware norms under it: what a user sees as `lower_precision`
for each output dtype, measured against the float64 yardstick."""

from __future__ import annotations

import torch

from htam_engine.evaluate.checks.compare import relative_error, tolerance_for
from htam_engine.evaluate.checks.observe import Observations, check_precision
from htam_engine.evaluate.config import DEFAULT_TOLERANCES


def _found(out, ref, exact) -> set[str]:
    obs = Observations()
    check_precision(out, ref, exact, "a set", obs)
    return {f.rule for f in obs.findings}


def test_complex_parts_rounded_through_bfloat16_are_lower_precision():
    g = torch.Generator().manual_seed(0)
    exact = torch.polar(torch.rand(4096, generator=g, dtype=torch.float64),
                        torch.rand(4096, generator=g, dtype=torch.float64) * 6.28)
    ref = exact.to(torch.complex64)
    rounded = torch.view_as_complex(torch.view_as_real(ref).to(torch.bfloat16).float().contiguous())
    assert _found(ref, ref, exact) == set()
    assert _found(rounded, ref, exact) == {"lower_precision"}


def test_float64_computed_in_float32_is_lower_precision():
    x = torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    exact = torch.nn.functional.silu(x)
    assert _found(exact.clone(), exact, exact) == set()
    assert _found(torch.nn.functional.silu(x.float()).double(), exact, exact) == {"lower_precision"}


def test_the_imaginary_part_counts_in_the_relative_error():
    exact = torch.complex(torch.ones(64, dtype=torch.float64), torch.ones(64, dtype=torch.float64))
    wrong_imaginary = torch.complex(torch.ones(64, dtype=torch.float64), torch.zeros(64, dtype=torch.float64))
    assert relative_error(wrong_imaginary, exact) > 0.5


def test_a_complex_dtype_takes_its_parts_tolerance():
    assert tolerance_for(torch.complex64, DEFAULT_TOLERANCES) == DEFAULT_TOLERANCES["float32"]
    assert tolerance_for(torch.complex128, DEFAULT_TOLERANCES) == DEFAULT_TOLERANCES["float64"]


def test_another_float64_algorithm_is_not_lower_precision():
    """A one-pass variance (E[x²] − E[x]²) of data far from zero loses ~1e-10 in float64 against
    the two-pass reference: another float64 algorithm, well above 64 ulps, far below float32's 3e-8."""
    x = 1e3 + torch.randn(64, 4096, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    exact = x.var(dim=-1, unbiased=False)
    one_pass = (x * x).mean(-1) - x.mean(-1) ** 2
    assert 1e-13 < relative_error(one_pass, exact) < 1e-9
    assert _found(one_pass, exact, exact) == set()
