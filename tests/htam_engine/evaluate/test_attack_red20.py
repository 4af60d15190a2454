"""Cheats of a twentieth red-team pass (CPU).

- cheat_tensor_shift_softmax: a softmax without its per-row max pass, every row shifted by one number
  for the whole tensor (a high quantile of 64 sampled elements), the row's own max only where its sum
  overflowed. Every set moved all rows of a tensor alike (the shifted-down set by one offset per
  tensor, which the sample follows), so it was ok (0.0055x against the honest 0.0043x); a row far below
  the others is 0 / 0. Now the rows-apart set (inputs.rows_apart): about half the rows, at least one,
  shifted down by 90 to 240, the rest as drawn.
"""

from __future__ import annotations

import torch

from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status


def test_a_softmax_shifted_by_one_number_for_every_row_is_caught():
    model = load_candidate("cheat_tensor_shift_softmax").ModelNew()
    x = torch.rand(2, 4096)
    assert torch.allclose(model(x), torch.softmax(x, -1), atol=1e-6)  # right where rows share a range
    x[1] -= 200
    assert torch.isnan(model(x)[1]).all()  # 0 / 0 on the row far below the other
    r = run_check("softmax", "cheat_tensor_shift_softmax", trials=10)
    assert r.status is Status.INCORRECT and "rows apart" in r.diagnostics.message, r.diagnostics.message
