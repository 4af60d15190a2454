"""Drawing the other input sets takes little memory beyond the set (issue 13): the RMS scale is
summed over runs (no float64 copy of an input), each input is released once its replacement
exists, and the Student-t draw works in place. Measured with a dispatch mode that records the
bytes of every tensor an operation makes, the views aside; the values are the ones the
out-of-place formulas gave."""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from htam_engine.evaluate.checks import compare
from htam_engine.evaluate.checks.inputs import _scale, heavy_tailed, large_magnitude, signed_normal
from htam_engine.evaluate.seeding import seeded
from tests.support.largest_tensor import LargestMade


class Live(TorchDispatchMode):
    """The most bytes alive at once of the tensors operations made inside the block (one figure
    per storage: an in-place result is the tensor it changed), views aside."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = 0

    def _gone(self, ptr: int) -> None:
        self.now -= self.live.pop(ptr, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor) and t.data_ptr() and t.data_ptr() not in self.live:
                    self.live[t.data_ptr()] = t.untyped_storage().nbytes()
                    self.now += self.live[t.data_ptr()]
                    self.peak = max(self.peak, self.now)
                    weakref.finalize(t, self._gone, t.data_ptr())
        return out


X_BYTES = 256 * 64 * 4


def test_the_scale_makes_no_float64_copy_of_the_input(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 1024)
    x = torch.rand(256, 64) * 3
    with LargestMade() as made:
        got = _scale(x)
    assert made.nbytes <= 1024 * 8, made.nbytes
    assert abs(got - float(x.double().pow(2).mean().sqrt())) < 1e-12


def test_other_distributions_hold_few_input_sized_tensors_at_once(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 1024)
    x = torch.rand(256, 64)
    # signed normal: its draw (and a run); Student-t: z and the pair of normals; x times a scale: x's copy.
    for name, make, most in (("signed", lambda v: signed_normal(v, 3), 1), ("t", lambda v: heavy_tailed(v, 3), 3),
                             ("|t|", lambda v: heavy_tailed(v, 3, positive=True), 3),
                             ("x30", lambda v: large_magnitude(v, 30.0), 1)):
        values = [x.clone()]
        with Live() as live:
            out = make(values)
        del out, values
        assert live.peak <= most * X_BYTES + 1024 * 8 * 4, (name, live.peak / X_BYTES)


def test_the_values_are_the_out_of_place_formulas():
    x = torch.rand(64, 32) * 2
    with seeded(11):
        z = torch.randn(x.shape)
        chi2 = torch.randn((2, *x.shape)).pow(2).sum(0)
        expected = (z / (chi2 / 2).sqrt().clamp_min(1e-3)).abs() * _scale(x)
    assert torch.equal(heavy_tailed([x, torch.arange(3)], 11, positive=True)[0], expected)
    with seeded(5):
        expected = torch.randn(x.shape) * _scale(x)
    assert torch.equal(signed_normal([x], 5)[0], expected)
    assert torch.equal(large_magnitude([x.clone()], 30.0)[0], x * 30.0)
