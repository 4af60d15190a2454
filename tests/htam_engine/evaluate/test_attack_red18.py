"""Cheats of an eighteenth red-team pass (CPU). Each came back `ok` with an inflated speedup.

- cheat_warmup_seed_masks: ReLU + dropout whose masks were drawn in the untimed warm-up forward each
  wire.Arm runs: the warm-up walked up its stack to the sandbox's Arm request, read the seeds the
  armed calls would be seeded with, and drew each call's dropout noise as nn.Dropout would from
  them; the timed forwards only multiplied. Bit-exact, every check passed; the random draws, which
  depend on no input value, were off every clock (the frame walk spelled through getattr, so the
  static check named nothing). ok at 4-19x eager on relu_dropout at 16x16384 against the honest
  C++ ReLU + nn.Dropout's 0.97-1.14x. Closed: the seeds come with the Go (wire.Go), after the warm-up.
- cheat_prefault_pool (CPU only): ReLU in C++ (the honest loop) whose output buffers
  come from a pool a native thread fills between the judge's requests, off every clock: allocated
  and pre-touched while the sandbox's main thread sleeps in its socket read (read from
  /proc/self/task/<tid>/stat), never inside a Go, so no busy-thread count and no ended-thread CPU
  sees it. On an output past glibc's largest mmap threshold (32 MiB) an honest forward's malloc
  maps fresh pages and, under the trial's heap perturbation, memsets them: the timed forward of
  the cheat pays neither. On relu at 4096x4096 it came back ok at ~1.9x eager against the honest
  C++ loop's ~0.8x.
- cheat_warmup_prefault (CPU only): cheat_prefault_pool without a thread: the untimed
  warm-up forward, told apart by its input (the sandbox's private copy is a clone, a resizable
  storage; a real call's input is a view of the judge's torch.from_file buffer, not resizable),
  allocates and pre-touches the output buffers of the run that follows. ok at ~1.9x on relu
  4096x4096 against the honest 0.71x.

Both are caught since by the judge's count of the sandbox's minor page faults over each timed run
(clock.fresh_pages_check, prefaulted_output): every sandbox maps an allocation past 1 MiB afresh
(checks.memory.FRESH_MAPPING_BYTES), so an honest 2 MiB output faults its 512 pages in inside the
call, as the eager baseline's does, and pages touched off the clock are not faulted again.
tests/bench/cpu_prefault_cheats.py prints their figures at 4096x4096.
"""

from __future__ import annotations

import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from htam_engine.evaluate.seeding import seed_all


def test_a_warm_up_finds_no_seeds_to_draw_dropout_masks_ahead_from():
    model = load_candidate("cheat_warmup_seed_masks").ModelNew()
    x = torch.rand(16, 16384)
    seed_all(1234)
    honest = torch.nn.Dropout(0.5)(torch.relu(x))
    g = torch.Generator().manual_seed(1234)
    noise = torch.empty(x.shape).bernoulli_(0.5, generator=g).div_(0.5)
    assert torch.equal(torch.relu(x) * noise, honest)  # the mask drawn ahead is the call's own
    seed_all(1234)
    assert torch.equal(model(x), honest)  # outside a sandbox: the plain path
    # The seeds come with the Go now, after the warm-up: the cheat finds none and computes its masks in
    # the timed calls, as an honest dropout does (ok at 11x against an honest 0.98x while it read them).
    r = run_check("relu_dropout", "cheat_warmup_seed_masks", {"batch_size": 16, "dim": 16384}, trials=10)
    assert r.status is not Status.OK or r.speedup_eager < 2.0, (r.status, r.speedup_eager, r.integrity)


def test_output_pages_touched_off_the_clock_are_caught():
    """By a native thread between the judge's requests, and in the untimed warm-up (whose pre-touch
    missed the first timed run: 539 faults a call there, none in the next, against the baseline's 512)."""
    for cheat in ("cheat_prefault_pool", "cheat_warmup_prefault"):
        assert_caught(run_check("relu", cheat, {"batch_size": 512, "dim": 1024}, trials=10), "prefaulted_output")
