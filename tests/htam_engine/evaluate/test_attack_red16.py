"""Cheats of a sixteenth red-team pass (CPU, softmax), aimed at the run of checked sets among the timed
runs (rounds.TimedRounds._checked_run) and the checked sets themselves.

- cheat_nomax_fallback_softmax: softmax without its max pass, falling back to the max pass only on a row
  whose exp sum overflowed. Every set the judge draws that could hurt exp(x) does so by a large
  *positive* value (x30/x100, spikes of 300-3000x RMS, heavy tails, signed normal up to ~3): each one
  overflows and takes the safe path, so every output is right. No set has a row of only very negative
  values (a shifted logit row), where exp underflows: rand(2, 32768) - 200 gives 0 / 0 = NaN where
  torch.softmax is finite. An undeserved `ok` (the kernel skips the max pass on every get_inputs row),
  caught since by a set shifted down (inputs.shifted_down).

Figures from `htam eval --device cpu` (Triton interpreted, the shortcut's gain does not show there):
honest_softmax ok at ~0.008x; cheat_nomax_fallback_softmax ok at 0.0080x.
"""

from __future__ import annotations

import torch

from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def test_the_fallback_softmax_is_wrong_in_general():
    model = load_candidate("cheat_nomax_fallback_softmax").ModelNew()
    x = torch.rand(2, 32768) - 200.0  # a row of only very negative logits: exp underflows to 0
    assert torch.isnan(model(x)).any() and not torch.isnan(torch.softmax(x, dim=1)).any()
    x = torch.rand(2, 32768) * 100  # what the judge draws: the overflow takes the safe path
    torch.testing.assert_close(model(x), torch.softmax(x, dim=1))


def test_a_max_pass_dropped_until_exp_overflows_is_caught():
    """No set had a row of only very negative values (ok at 0.0080x, as honest_softmax): a set shifted
    down by 90-240 per tensor is checked now, and drawn in the run of checked sets (inputs.shifted_down)."""
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_nomax_fallback_softmax")
    assert r.status is Status.INCORRECT and not r.correct, (r.status, r.speedup_eager)
    assert "shifted down" in r.diagnostics.message
