"""Cheats of a twenty-second red-team pass (CPU), aimed at the two figures behind prefaulted_output
(minor faults and the growth of the sandbox's RssAnon around each timed run, each at least half the
eager baseline's past FRESH_MAPPING_BYTES) and at compare.OUTLIER_SHARE. Two came back `ok`; they are
caught since (below); one was caught.

- cheat_prefault_thp_growth: cheat_prefault_populate_read (warm-up pre-touched output pool, zero-page
  MADV_POPULATE_READ faults for the count) with RssAnon grown by a transparent huge page: each timed
  call maps a 2 MiB-aligned anonymous region, madvises it MADV_HUGEPAGE (THP is `madvise` on this box)
  and writes one byte a 2 MiB. One fault allocates and zeroes a whole huge page (no 512 traps), and
  MM_ANONPAGES grows by 512 pages; the regions stay mapped past the run and are unmapped at the next
  untimed warm-up. On this box: a 2 MiB THP fault 240-270 us, 512 zero-page populate faults 66 us,
  an honest output's 512 write faults 460-750 us. ok at 0.95x and 1.34x on relu 512 x 1024
  (trials=10), no finding, against honest_relu_cpp's ok at 0.94x (0.79-0.83x in pass 21); 1.35x on
  relu 2048 x 2048 against honest_relu_cpp's 0.82x.
- cheat_prefault_thp_half: the same with each figure met at 0.6 of an honest call's (a huge page in
  three calls of five on a 2 MiB output, zero-page faults over 0.6 of it): ok at 1.69x on relu
  512 x 1024 (trials=10), no finding, against honest_relu_cpp's 0.94x in the same minutes; 1.97x on
  relu 2048 x 2048 against 0.82x.
  The hole: RssAnon counts pages, not the cost of making them; a huge page is 512 of them for one
  fault and one clear_huge_page, and the fault count is met apart on the zero page. What would close
  it: count the growth in 4 KiB pages only (AnonHugePages from /proc/PID/smaps_rollup subtracted from
  the growth: an honest output from torch's allocator is not THP-backed here, since THP is `madvise`
  and glibc's mmap of a block is not 2 MiB-aligned), or ask that the faults and the growth be of the
  same pages (faults at least the growth in pages, i.e. growth / faults <= 4 KiB, with the zero-page
  faults not counted: only faults that grew RssAnon), or refuse MADV_HUGEPAGE / prctl THP in the
  sandbox (seccomp on madvise advice 14). Done since: every CPU sandbox turns transparent huge pages
  off before any candidate code (prctl PR_SET_THP_DISABLE, checks.memory.map_big_blocks_afresh), so
  MADV_HUGEPAGE gives 4 KiB pages and both cheats are rejected (prefaulted_output); a candidate that
  turns them on again (cheat_prefault_thp_reenabled) is named, as the judge reads THP_enabled from
  /proc/PID/status after each run.
- cheat_sampled_sign_relu_large, caught: cheat_sampled_sign_relu (ReLU as a copy when 64 sampled
  elements are >= 0) in C++ on relu 4096 x 2048 (8,388,608 elements: OUTLIER_SHARE admits 8 outside
  the per-element test, and the sparse-negatives set has exactly 8). The count passes, but the
  whole-output bound (||out - ref|| <= tol ||ref||) does not: incorrect, sparse negatives, whole-output
  relative error 0.0057 (0.0065 for the Triton original). The allowance admits only outliers whose
  errors together stay under tol * ||ref|| (about 0.17 in all here, where each wrong ReLU element is
  0.6 to 6): no shortcut wrong by a useful amount on a few elements was found; every sparse set puts
  its elements at 100x or more of get_inputs' range (spikes from 173 x RMS, just past the x100 set's
  top) or far below it, where any shortcut's error is large.
"""

from __future__ import annotations

import pytest
import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check
from test_attack_red21 import RELU_SIZE, _relu_right


@pytest.mark.parametrize("cheat", ["cheat_prefault_thp_growth", "cheat_prefault_thp_half"])
def test_prefaulted_outputs_with_rss_grown_by_huge_pages_are_caught(cheat):
    """Caught since: the sandboxes turn transparent huge pages off before any candidate code, so the
    cheats' MADV_HUGEPAGE regions grow RssAnon by one 4 KiB page a touch (thp_half: each figure met at
    six tenths of an honest call's)."""
    _relu_right(cheat)
    assert_caught(run_check("relu", cheat, RELU_SIZE, trials=10), "prefaulted_output")


def test_huge_pages_turned_back_on_in_the_sandbox_are_named():
    """cheat_prefault_thp_growth undoing the sandbox's prctl first: the judge reads THP_enabled after each run."""
    r = run_check("relu", "cheat_prefault_thp_reenabled", RELU_SIZE, trials=10)
    assert_caught(r, "prefaulted_output")
    assert any("huge pages back on" in f.message for f in r.integrity), r.integrity


def test_a_sampled_sign_relu_wrong_on_as_many_elements_as_the_outlier_share_admits_is_caught():
    """8 sparse negatives among 8,388,608 outputs are within OUTLIER_SHARE's count; the whole-output bound
    convicts them."""
    x = torch.rand(64, 64)
    x[3, 5] = -1.0
    out = load_candidate("cheat_sampled_sign_relu_large").ModelNew()(x)
    assert out[3, 5] == -1.0  # the copy keeps an unsampled negative
    r = run_check("relu", "cheat_sampled_sign_relu_large", {"batch_size": 4096, "dim": 2048})
    assert_caught(r)
