"""The judge's whole-output helpers read their tensors in runs (issue 13): output_fingerprint,
same_values and nonfinite give what the whole-tensor formulas gave, and no temporary they make
is larger than one run (CHUNK_ELEMENTS) whatever the tensor's size."""

from __future__ import annotations

import math

import pytest
import torch

from htam_engine.evaluate.checks import compare
from htam_engine.evaluate.checks.memory import same_values
from htam_engine.evaluate.checks.observe import nonfinite, output_fingerprint
from tests.support.largest_tensor import LargestMade


def whole_fingerprint(out) -> tuple[float, ...]:
    """The unchunked formula output_fingerprint had before it was chunked."""
    prints: list[float] = []
    for t in compare.tensors(out):
        if t.numel() == 0:
            prints += [0.0, 0.0]
            continue
        v = t.detach().reshape(-1)
        v = torch.view_as_real(v).reshape(-1) if v.is_complex() else v
        v = torch.nan_to_num(v.double(), nan=1.5e300, posinf=1.7e300, neginf=-1.7e300)
        w = torch.arange(1, v.numel() + 1, device=v.device, dtype=torch.float64).remainder_(1009).add_(1)
        prints += [float((v * w).sum()), float(v.abs().sum())]
    return tuple(p if math.isfinite(p) else 0.0 for p in prints)


def whole_same_values(a, b) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
    return bool(torch.equal(a, b))


def _outputs():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(37, 11, generator=g)
    with_nan = x.clone()
    with_nan[3, 4], with_nan[5, 0], with_nan[9, 9] = float("nan"), float("inf"), -float("inf")
    return {
        "plain": x,
        "strided": torch.randn(11, 37, generator=g).t(),
        "nonfinite": with_nan,
        "tuple": (x[:5], torch.randint(-9, 9, (13,), generator=g)),
        "complex": torch.randn(6, 5, dtype=torch.complex64, generator=g),
        "half": x.half(),
        "scalar": torch.tensor(2.5),
        "empty": torch.empty(0, 3),
    }


OUTPUTS = _outputs()


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_fingerprint_in_one_run_is_the_whole_tensor_formula(name):
    assert output_fingerprint(OUTPUTS[name]) == whole_fingerprint(OUTPUTS[name])


@pytest.mark.parametrize("run_elements", [7, 1])
@pytest.mark.parametrize("name", list(OUTPUTS))
def test_fingerprint_in_short_runs_agrees_with_the_whole_formula_to_rounding(name, run_elements, monkeypatch):
    expected = whole_fingerprint(OUTPUTS[name])
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    got = output_fingerprint(OUTPUTS[name])
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-9)
    assert output_fingerprint([t.clone() if isinstance(t, torch.Tensor) else t for t in compare.tensors(
        OUTPUTS[name])]) == got  # equal outputs, equal fingerprints


@pytest.mark.parametrize("run_elements", [compare.CHUNK_ELEMENTS, 7, 1])
def test_same_values_in_runs_decides_as_the_whole_tensor_test(run_elements, monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    pairs = []
    for t in compare.tensors(list(OUTPUTS.values())):
        changed = t.clone()
        if changed.numel():
            changed[(-1,) * changed.dim()] += 1
        pairs += [(t, t.clone()), (t, changed), (t, t.reshape(-1)), (t, t.to(torch.complex128 if t.is_complex() else torch.float64))]
    nan = torch.tensor([1.0, float("nan")])
    pairs += [(nan, nan.clone()), (nan, torch.tensor([1.0, 2.0])), (torch.tensor([0.0]), torch.tensor([-0.0]))]
    for a, b in pairs:
        assert same_values(a, b) == whole_same_values(a, b), (a, b)


@pytest.mark.parametrize("run_elements", [7, 1])
def test_nonfinite_in_runs(run_elements, monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    assert nonfinite(OUTPUTS["nonfinite"]) and not nonfinite(OUTPUTS["plain"]) and not nonfinite(OUTPUTS["tuple"])


def test_no_temporary_is_larger_than_one_run(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 64)
    x = torch.randn(300, 40)
    y, same = x.clone(), x.clone()
    y[-1, -1] = float("nan")  # not equal: the NaN-aware comparison runs too
    for fn in (lambda: output_fingerprint(x), lambda: same_values(x, y), lambda: same_values(x, same),
               lambda: nonfinite(y)):
        with LargestMade() as seen:
            fn()
        assert seen.numel <= 64, seen.numel
