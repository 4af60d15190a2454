"""draws.DrawNotes: a float64 run draws the numbers its noted float32 run drew, or says it cannot."""

from __future__ import annotations

import pytest
import torch

from htam_engine.evaluate.draws import DrawNotes, DrawsDiverged


def _forward(x: torch.Tensor) -> torch.Tensor:
    noise = torch.randn_like(x) + torch.empty_like(x).normal_(0.0, 1.0) + torch.empty_like(x).uniform_()
    noise = noise + torch.rand(x.shape, dtype=x.dtype) + torch.nn.functional.rrelu(x, training=True)
    into = torch.empty_like(x)
    torch.normal(x, 1.0, out=into)  # the drawn-into tensor reaches the draw by name (out=)
    noise = noise + into
    return x * (torch.rand_like(x) >= 0.5) + noise + torch.multinomial(torch.softmax(x, -1), 3).to(x.dtype).sum()


def _run(x: torch.Tensor, notes: DrawNotes, mode) -> torch.Tensor:
    torch.manual_seed(11)
    with mode(notes):
        return _forward(x)


def test_a_float64_run_draws_the_float32_runs_numbers_in_place_draws_included():
    notes, x = DrawNotes(), torch.randn(8, 64)
    ref = _run(x, notes, DrawNotes.taking)
    assert len(notes.draws) == 8  # multinomial and rrelu_with_noise draw inside one op each
    exact = _run(x.double(), notes, DrawNotes.replaying)
    assert exact.dtype == torch.float64
    assert (ref.double() - exact).abs().max() < 1e-6 * ref.abs().max()  # float32 rounding, no other draw
    torch.manual_seed(11)
    assert (ref.double() - _forward(x.double())).abs().max() > 0.1  # unreplayed: other numbers


def test_a_run_drawing_otherwise_than_its_notes_is_refused():
    notes = DrawNotes()
    with notes.taking():
        torch.rand(4)
    with pytest.raises(DrawsDiverged), notes.replaying():
        torch.randn(4)
    with pytest.raises(DrawsDiverged), notes.replaying():
        torch.rand(4), torch.rand(4)  # one draw more than noted


def test_the_yardstick_of_a_run_that_diverged_is_none_and_the_next_run_has_one():
    from htam_engine.evaluate.reference import ReferenceModel

    class Branchy(torch.nn.Module):
        def forward(self, x):  # draws only on sets with a negative value
            return x + torch.randn_like(x) if bool((x < 0).any()) else x * 2

    ref = ReferenceModel(Branchy, [], 0, "cpu")
    ref.outputs([torch.rand(4, 4)], 1, "positive")
    assert ref.exact([-torch.rand(4, 4)], 2) is None  # drew where its notes had no draw
    signed = -torch.rand(4, 4)
    out = ref.outputs([signed.clone()], 3, "negative")
    assert (out.double() - ref.exact([signed.clone()], 3)).abs().max() < 1e-6
