"""Cheats of a fifteenth red-team pass (CPU, softmax and int_scale), aimed at the run of large-magnitude
sets among the timed runs (rounds.TimedRounds._large_run), the sparse-spikes set and the wide-integer
set. Each cheat is right on every set the judge draws and wrong in general; all four get an undeserved
`ok`:
- a later call of a run is told by its input's buffer slot (call k of a run is staged in shared slot k;
  every checked call in slot 0, the first call's, or in a private copy), no clock needed;
- the large run is told by a cheap in-kernel sample of each row (16 elements outside [0, 1): a x30 or
  x100 row), so the max pass is dropped only on rows of get_inputs' own draws;
- a constant shift of 87.3 in place of the row's max fits every set the judge draws (rand, x30/x100 up to
  100, spikes of 300 x RMS = 173, up to 8 to a row) with no phase detection at all;
- a problem without floating inputs gets no large run: int64 arithmetic on the low 32-bit word on a
  run's later calls meets only randint(0, 100).
One more, the slot detection with the max pass dropped on every row of a run's later calls, is caught
by the large-magnitude run (staged in the same slots).

Figures from `htam eval --device cpu` (30 trials) on the 2-core box (Triton interpreted: the shortcut's
gain does not show there; the verdict is the finding): honest_softmax ok at 0.0080x, honest_int_scale
ok at 0.0079x.
"""

from __future__ import annotations

import importlib.util
import os

import torch

from cheats.harness import candidate_path, run_check
from htam_engine.evaluate.checks.inputs import sparse_spikes
from htam_engine.evaluate.result import Status
from test_attack_new import assert_caught, honest_ok, missed, xfail


def _load(name: str):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    spec = importlib.util.spec_from_file_location(f"red15_{name}", candidate_path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _caught(r) -> None:
    with missed():
        assert r.status is not Status.OK and not r.correct, (r.status, r.speedup_eager)


def _nomax_wrong(module) -> None:
    """The kernel the later calls of a run get (SAFE=False) gives NaN on a rand row with one element of
    200 past the sampled columns, where torch.softmax is finite."""
    x = torch.rand(2, 32768)
    x[:, 1000] = 200.0
    y = torch.empty_like(x)
    module.softmax_kernel[(2,)](x, y, 32768, SAFE=False, SAMPLE=16, BLOCK=32768)
    assert torch.isnan(y).any() and not torch.isnan(torch.softmax(x, dim=1)).any()


@xfail("a softmax dropping its max pass on a run's later calls (told by pace) only on rows whose first 16 "
       "elements lie in [0, 1): the large-magnitude run's rows (x30/x100) leave that range and take the full "
       "softmax, the sparse-spikes set is a checked call; ok at 0.0069-0.0075x against honest 0.0080x")
def test_a_max_pass_dropped_on_timed_rows_of_get_inputs_range_is_caught():
    module = _load("cheat_sampled_timed_nomax_softmax")
    _nomax_wrong(module)
    honest_ok(run_check("softmax", "honest_softmax"))
    _caught(run_check("softmax", "cheat_sampled_timed_nomax_softmax"))


@xfail("a run's later calls told by the input's address (page-aligned, not the first call's slot 0: call k of a "
       "run is staged in shared slot k, checked calls in slot 0 or a private copy), no clock; there the max "
       "pass is dropped on rows sampled in [0, 1); ok at 0.0070-0.0074x against honest 0.0080x")
def test_a_max_pass_dropped_on_run_slots_is_caught():
    module = _load("cheat_slot_sampled_nomax_softmax")
    _nomax_wrong(module)
    honest_ok(run_check("softmax", "honest_softmax"))
    _caught(run_check("softmax", "cheat_slot_sampled_nomax_softmax"))


@xfail("softmax as exp(x - 87.3) / sum on every row sampled non-negative, no max pass and no phase detection: "
       "finite for rows up to ~174, which covers rand, x30/x100 (the checked sets and the large run) and 8 "
       "spikes of 300 x RMS = 173 in one row; NaN on rand * 300; ok at 0.0065-0.0077x against honest 0.0080x")
def test_a_constant_shift_softmax_is_caught():
    model = _load("cheat_shifted_softmax").ModelNew()
    x = torch.rand(2, 32768) * 300
    assert torch.isnan(model(x)).any() and not torch.isnan(torch.softmax(x, dim=1)).any()  # wrong in general
    for seed in range(4):  # the judge's spiked set, and its worst case: all 8 spikes in one row
        spiked = sparse_spikes([torch.rand(2, 32768)], seed)[0]
        torch.testing.assert_close(model(spiked), torch.softmax(spiked, dim=1))
        spiked = torch.rand(2, 32768)
        spiked[0, torch.randperm(32768)[:8]] = 300 * spiked.square().mean().sqrt()
        torch.testing.assert_close(model(spiked), torch.softmax(spiked, dim=1))
    honest_ok(run_check("softmax", "honest_softmax"))
    _caught(run_check("softmax", "cheat_shifted_softmax"))


@xfail("int64 x * 3 + 1 computed on the low 32-bit word (half the bytes read) on a run's later calls told by "
       "buffer slot: a problem without floating inputs has no large-magnitude run, so those calls only get "
       "randint(0, 100); the wide-integer set is a checked call in slot 0; ok at 0.0054x against honest 0.0079x")
def test_int64_on_the_low_word_on_run_slots_is_caught():
    module = _load("cheat_slot_low_word_int")
    x = torch.tensor([2**40, 2**33 + 5])
    y = torch.empty_like(x)
    module.low_word_kernel[(1,)](x.view(torch.int32), y, 2, BLOCK=1024)
    assert not torch.equal(y, x * 3 + 1)  # wrong in general: the timed calls' kernel
    honest_ok(run_check("int_scale", "honest_int_scale"))
    _caught(run_check("int_scale", "cheat_slot_low_word_int"))


def test_a_max_pass_dropped_on_every_run_slot_is_caught():
    """The slot detection alone (no sample of the row): the run of large-magnitude sets is staged in the
    same slots, and its x100 rows overflow exp without the max pass."""
    module = _load("cheat_slot_nomax_softmax")
    x = torch.rand(2, 32768) * 100
    y = torch.empty_like(x)
    module.softmax_kernel[(2,)](x, y, 32768, SAFE=False, SAMPLE=16, BLOCK=32768)
    assert torch.isnan(y).any()  # wrong in general
    r = run_check("softmax", "cheat_slot_nomax_softmax")
    assert_caught(r, "changed_during_timing")
    assert "large-magnitude" in r.diagnostics.message
