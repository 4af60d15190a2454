"""Cheats of a fifteenth red-team pass (CPU, softmax and int_scale), aimed at the run of checked sets
among the timed runs (then of large-magnitude sets only), the sparse-spikes set and the wide-integer
set. Each cheat is right on every set the judge drew and wrong in general; four got an undeserved `ok`,
all caught since:
- a later call of a run is told by its input's buffer slot (call k of a run is staged in shared slot k;
  every checked call in slot 0, the first call's, or in a private copy), no clock needed;
- the large run was told by a cheap in-kernel sample of each row (16 elements outside [0, 1): a x30 or
  x100 row), so the max pass was dropped only on rows of get_inputs' own draws;
- a constant shift of 87.3 in place of the row's max fitted every set the judge drew (rand, x30/x100
  up to 100, spikes of 300 x RMS = 173, up to 8 to a row) with no phase detection at all;
- a problem without floating inputs got no run of checked sets: int64 arithmetic on the low 32-bit word
  on a run's later calls met only randint(0, 100).
What catches them: a run among the timed runs for each kind of checked set the reference accepted
(large magnitude, sparse spikes, shifted down, wide integers), that kind at every call of it, so a run's
later calls meet every kind (rounds.TimedRounds._checked_run), and a spike's size drawn per tensor
between 300x and 3000x the RMS (inputs.sparse_spikes). One more, the slot detection with the max pass
dropped on every row of a run's later calls, was caught by the large-magnitude run then and is now.

Figures from `htam eval --device cpu` (30 trials) on the 2-core box (Triton interpreted: the shortcut's
gain does not show there; the verdict is the finding): honest_softmax ok at 0.0080x, honest_int_scale
ok at 0.0079x; the four at 0.0054-0.0077x before.
"""

from __future__ import annotations

import torch

from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import assert_caught, honest_ok


def _caught(r) -> None:
    """Turned down on a call of the run of checked sets, where the later calls meet every kind; or, for
    the cheat telling later calls by pace, on a single checked call it took for a later one."""
    assert r.status is not Status.OK and not r.correct, (r.status, r.speedup_eager)
    assert "a run of timed calls" in r.diagnostics.message or r.status is Status.INCORRECT, r.diagnostics.message


def _nomax_wrong(module) -> None:
    """The kernel the later calls of a run get (SAFE=False) gives NaN on a rand row with one element of
    200 past the sampled columns, where torch.softmax is finite."""
    x = torch.rand(2, 32768)
    x[:, 1000] = 200.0
    y = torch.empty_like(x)
    module.softmax_kernel[(2,)](x, y, 32768, SAFE=False, SAMPLE=module.SAMPLE, BLOCK=32768)
    assert torch.isnan(y).any() and not torch.isnan(torch.softmax(x, dim=1)).any()


def test_a_max_pass_dropped_on_timed_rows_of_get_inputs_range_is_caught():
    module = load_candidate("cheat_sampled_timed_nomax_softmax")
    _nomax_wrong(module)
    honest_ok(run_check("softmax", "honest_softmax"))
    _caught(run_check("softmax", "cheat_sampled_timed_nomax_softmax"))


def test_a_max_pass_dropped_on_run_slots_is_caught():
    module = load_candidate("cheat_slot_sampled_nomax_softmax")
    _nomax_wrong(module)
    honest_ok(run_check("softmax", "honest_softmax"))
    _caught(run_check("softmax", "cheat_slot_sampled_nomax_softmax"))


def test_a_constant_shift_softmax_is_caught():
    model = load_candidate("cheat_shifted_softmax").ModelNew()
    x = torch.rand(2, 32768) * 300
    assert torch.isnan(model(x)).any() and not torch.isnan(torch.softmax(x, dim=1)).any()  # wrong in general
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_shifted_softmax")  # caught on a spiked set, checked or in the run
    assert r.status is not Status.OK and not r.correct, (r.status, r.speedup_eager)
    assert "sparse spikes" in r.diagnostics.message, r.diagnostics.message


def test_int64_on_the_low_word_on_run_slots_is_caught():
    module = load_candidate("cheat_slot_low_word_int")
    x = torch.tensor([2**40, 2**33 + 5])
    y = torch.empty_like(x)
    module.low_word_kernel[(1,)](x.view(torch.int32), y, 2, BLOCK=1024)
    assert not torch.equal(y, x * 3 + 1)  # wrong in general: the timed calls' kernel
    honest_ok(run_check("int_scale", "honest_int_scale"))
    _caught(run_check("int_scale", "cheat_slot_low_word_int"))


def test_a_max_pass_dropped_on_every_run_slot_is_caught():
    """The slot detection alone (no sample of the row): the run of checked sets is staged in the same
    slots, and its x100 rows and spikes overflow exp without the max pass."""
    module = load_candidate("cheat_slot_nomax_softmax")
    x = torch.rand(2, 32768) * 100
    y = torch.empty_like(x)
    module.softmax_kernel[(2,)](x, y, 32768, SAFE=False, SAMPLE=module.SAMPLE, BLOCK=32768)
    assert torch.isnan(y).any()  # wrong in general
    r = run_check("softmax", "cheat_slot_nomax_softmax")
    assert_caught(r, "changed_during_timing")
    assert "a run of timed calls" in r.diagnostics.message
