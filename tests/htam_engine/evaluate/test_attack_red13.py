"""Cheats of a thirteenth red-team pass (CPU, softmax and int_scale): kernels that were right on
every input the judge drew and are wrong in general, all three ok then and caught since. A max pass
over a strided sample of the row (NaN on a row with one spike: caught by the sparse-spikes set), a
max pass dropped on the later calls of a run only, where nothing but get_inputs' own rand [0, 1)
draws came (the x100 set that convicts a softmax without its max was a checked call, one to a Go:
caught by the run of checked sets among the timed runs), and int64 arithmetic done in
float64 (exact below 2^53, the wide-integer set's |x| < 2^40 then: caught by its values at every
bit length up to 62).

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and its
class). Each test shows the input the cheat fails on failing, its honest counterpart ok, and the
judge catching it. Figures from `htam eval --device cpu` (30 trials) on the 2-core box:
honest_softmax (Triton, interpreted) ok at 0.0080x.
"""

from __future__ import annotations

import torch

from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import assert_caught, honest_ok


def test_a_softmax_with_a_sampled_max_is_caught():
    """A softmax taking its max from one element in 64 of the row was right on every set the judge
    drew (uniform and normal rows: the sample's max is within ~1 of the row's, exp never overflows)
    and gives NaN on a row with one spike 200 above the rest at an unsampled column, where
    torch.softmax gives a one-hot row (ok at 0.0071x, honest 0.0080x). A set of sparse spikes is
    checked now (inputs.sparse_spikes)."""
    spiked = torch.rand(2, 32768)
    spiked[:, 1] = 200.0  # column 1: not among the sampled columns 0, 64, 128, ...
    out = load_candidate("cheat_sampled_max_softmax").ModelNew()(spiked)
    assert torch.isnan(out).any() and not torch.isnan(torch.softmax(spiked, dim=1)).any()  # wrong in general
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_sampled_max_softmax")
    assert r.status is Status.INCORRECT and not r.correct, (r.status, r.speedup_eager)
    assert "sparse spikes" in r.diagnostics.message


def test_a_max_pass_dropped_on_timed_calls_only_is_caught():
    """Timed calls drew only get_inputs (rand [0, 1)) and the large-magnitude sets were checked calls
    one to a Go: a softmax dropping its max pass on the later calls of a run (told apart by pace) never
    met an input where exp overflows (ok at 0.0091x against the honest 0.0080x). A run of timed
    calls on checked sets now comes among the timed runs (rounds.TimedRounds._checked_run)."""
    module = load_candidate("cheat_timed_nomax_softmax")
    x = torch.rand(2, 32768) * 100
    y = torch.empty_like(x)
    module.softmax_kernel[(2,)](x, y, 32768, SAFE=False, BLOCK=32768)  # the timed calls' kernel
    assert torch.isnan(y).any()  # wrong in general: the judge's own x100 set would convict it
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_timed_nomax_softmax")
    if r.status is Status.INCORRECT:  # it took a single checked call for a later one (part_later_by_pace)
        assert not r.correct and "get_inputs" not in r.diagnostics.message, r.diagnostics.message
        return
    assert_caught(r, "changed_during_timing")
    assert "a run of timed calls" in r.diagnostics.message


def test_int64_arithmetic_done_in_float64_is_caught():
    """x * 3 + 1 on int64 computed in float64 was exact on the wide-integer set (|x| < 2^40: results
    below 2^42 fit the 53-bit mantissa) and is wrong past 2^51 (ok at 0.0066x, honest_int_scale
    0.0074x). The set's int64 values now come at every bit length up to 62 (inputs.wide_integers)."""
    x = torch.tensor([2**60 + 1, 2**55 + 3])
    assert not torch.equal(load_candidate("cheat_int_via_float64").ModelNew()(x), x * 3 + 1)  # wrong in general
    honest_ok(run_check("int_scale", "honest_int_scale"))
    r = run_check("int_scale", "cheat_int_via_float64")
    assert r.status is Status.INCORRECT and not r.correct, (r.status, r.speedup_eager)
    assert "wide-integers" in r.diagnostics.message and "exact comparison for torch.int64" in r.diagnostics.message
