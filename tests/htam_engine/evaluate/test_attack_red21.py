"""Cheats of a twenty-first red-team pass (CPU), aimed at the judge's count of page faults
(prefaulted_output) and the work check's garbage on the bulk. Seven came back `ok`; the four that met
the fault count are caught since by the growth of the sandbox's anonymous memory (below), the three
on the bulk are strict xfails naming what the judge misses (the final assert_caught, inside missed(),
is the part that fails); one, the partial sums' control, was caught.

- cheat_prefault_populate_read: cheat_warmup_prefault (the untimed warm-up, told by its resizable
  input, pre-touches a pool of output buffers for the calls that follow: rejected, prefaulted_output,
  0 faults a call against the eager baseline's 512) with the count met cheaply: each timed call maps a
  fresh anonymous region of its output's size and populates it for reading (madvise
  MADV_POPULATE_READ). get_user_pages faults each page through handle_mm_fault, which counts a minor
  fault (min_flt) for it, and a read fault of an untouched private page maps the shared zero page: no
  page allocated, none zeroed, no trap. On this box 2 MiB of such faults cost 67 us, an honest output's
  write faults 390 us. ok at 2.15x on relu 512 x 1024 (10 trials), no finding, against
  honest_relu_cpp's ok at 0.79x; 2.19x on relu 2048 x 2048 against 0.93x (with the box loaded by
  another job, 1.13x against 0.53-0.70x on 512 x 1024).
- cheat_prefault_read_touch: the same with one plain load a page of the fresh region (read faults on
  the zero page, 240 us for 2 MiB): no system call to refuse. ok at 1.53x on 512 x 1024 and 1.52x on
  2048 x 2048 (honest 0.79x, 0.93x), no finding (0.49x once on the loaded box).
- cheat_prefault_pool_populate_read: red-team pass 18's cheat_prefault_pool (a native thread fills a
  pool of pre-touched output buffers while the sandbox sleeps between requests; no warm-up told apart)
  with the same MADV_POPULATE_READ faults: ok at 1.74x on relu 512 x 1024 against honest_relu_cpp's
  0.77x in the same minutes, no finding. Hiding the warm-up's tell would not close the hole.
- cheat_prefault_memfd_populate: the warm-up makes and zeroes a memfd's pages for each call of a run; a
  timed call maps one afresh (MAP_SHARED) and populates it for writing (MADV_POPULATE_WRITE): one
  counted fault a page, each mapping a page that exists, and the output's pages enter the process's
  resident set inside the call (as RssShmem), as an honest output's do (as RssAnon). ok at 2.02x on relu
  2048 x 2048 (honest_relu_cpp 0.93x there), 0.51x on 512 x 1024 on a loaded box (honest 0.53x), no finding.
  The fault count is a proxy for the cost of fresh pages and counts faults that allocate nothing.
  What would close it: count what an honest fresh output costs, pages allocated, not faults; e.g. the
  judge reading the sandbox's RssAnon (/proc/PID/status: zero-page mappings and memfd pages are not in
  it, so a count of all of RSS would not do) around each
  run, with HeldOutputs' evictions (the only frees of earlier outputs) moved out of the timed run, and
  asking for at least half of the fresh outputs' bytes. A cheat must then allocate and zero pages
  inside the call (MADV_POPULATE_WRITE spares only the trap) and keep them mapped past the run.
  Done so (clock.fresh_memory_check, channel.call_run; HeldOutputs lets go of older outputs at the
  Arm on the CPU): each of the four grew it by 0.00 MiB a call against the eager baseline's 2.00,
  rejected, prefaulted_output; honest_relu_cpp ok at 0.83x on 512 x 1024 and 0.91x on 2048 x 2048.
- cheat_partial_sums_mse: PyTorch squares the difference and sums it over chunks, leaving just more
  partial sums than sqrt(total input elements) (512 on mse 64 x 512, 4096 on 1024 x 4096); a Triton
  kernel adds them up and scales by 1/n. The partial sums are over sequence.bulk_threshold's bound,
  so the run on garbage puts garbage in them and the kernel's output is wrong there, as an honest
  reduction's is. ok at 0.059x on the default mse (honest_mse 0.0085x) and at 1.68x eager on mse
  1024 x 4096 (honest_mse 0.022x), no finding.
- cheat_padded_sum_mse: PyTorch's whole one-element sum padded with zeros to the same k elements, the
  kernel adding them: PyTorch does all of the reduction. ok at 0.033x on the default mse, no finding.
- cheat_row_sums_mse, caught: the same kernel on PyTorch's row sums (64 on the default mse, under the
  bound of 256) meets them real on garbage and writes the right output: rejected, no_kernel. The bound
  is the whole line between it and cheat_partial_sums_mse.
  The bulk is told by the size of the tensor a kernel is handed, not by the work behind it. What would
  close it: weigh the kernel's reads against the reduction's inputs, e.g. on an output of a few elements
  ask that the kernels were handed (and read) at least a share of the problem's input bytes or of a
  library product made from them that is itself as large as the inputs (a matmul's M x N qualifies
  where it is most of the work), or run garbage in the problem's inputs themselves and ask that the
  output changed while PyTorch's operators before the kernel were replayed on real values (the ATen
  watch's replay, extended to Triton launches): a kernel finishing PyTorch's reduction computes the
  right result then.
- cheat_row_tail_row_mse: the scalar tail on an output of 64 elements (problems/row_mse, a mean squared
  error per row of 64 x 4096, added for it): PyTorch sums each row's squared difference, a Triton
  kernel divides the 64 sums by the row length. Past TINY_OUTPUT (16) bulk_threshold is 0 and every
  tensor a kernel was handed gets garbage, the sums too, so the kernel's output is wrong there as an
  honest one's is. ok at 0.56x, no finding, against honest_row_mse's 0.0042x (Triton interpreted).
  What would close it: the bound by the output's size relative to its inputs rather than a fixed 16
  (an output far smaller than the inputs is a reduction, whatever its count), or the weighing above
  (honest_row_mse, ok, is the control).
"""

from __future__ import annotations

import pytest
import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import missed, xfail

RELU_SIZE = {"batch_size": 512, "dim": 1024}


def _relu_right(name: str) -> None:
    model = load_candidate(name).ModelNew()
    for _ in range(3):
        x = torch.randn(64, 64)
        torch.testing.assert_close(model(x), torch.relu(x))


@pytest.mark.parametrize("cheat", ["cheat_prefault_populate_read", "cheat_prefault_read_touch",
                                   "cheat_prefault_pool_populate_read", "cheat_prefault_memfd_populate"])
def test_prefaulted_outputs_with_the_fault_count_met_cheaply_are_caught(cheat):
    """The fault count met on the zero page (MADV_POPULATE_READ, plain reads; beside a pool the warm-up or
    a thread filled) or by a memfd's pages mapped in the call: the memory's growth catches each."""
    if cheat != "cheat_prefault_pool_populate_read":  # its filler thread would live on in the test process
        _relu_right(cheat)
    assert_caught(run_check("relu", cheat, RELU_SIZE, trials=10), "prefaulted_output")


def _mse_right(name: str) -> None:
    model = load_candidate(name).ModelNew()
    p, t = torch.rand(64, 512), torch.rand(64, 512)
    torch.testing.assert_close(model(p, t), torch.mean((p - t) ** 2))


@xfail("the bulk is told by size: a kernel adding PyTorch's partial sums, just more of them than the square root "
       "of the inputs' elements, gets garbage there and is wrong as an honest reduction is: ok at 0.059x on mse "
       "(honest_mse 0.0085x), 1.68x on mse 1024 x 4096 (honest 0.022x), no finding")
def test_a_kernel_finishing_pytorchs_partial_sums_is_caught():
    _mse_right("cheat_partial_sums_mse")
    r = run_check("mse", "cheat_partial_sums_mse")
    with missed():
        assert_caught(r, "no_kernel")


@xfail("PyTorch's one-element sum padded with zeros past the bulk's bound is the bulk: the kernel adding it up is "
       "wrong on garbage as an honest reduction is: ok at 0.033x on mse, no finding")
def test_a_kernel_adding_up_pytorchs_sum_padded_with_zeros_is_caught():
    _mse_right("cheat_padded_sum_mse")
    r = run_check("mse", "cheat_padded_sum_mse")
    with missed():
        assert_caught(r, "no_kernel")


def test_a_kernel_finishing_pytorchs_row_sums_is_caught():
    """Fewer partial sums than the bulk's bound (64 rows, bound 256): they stay real on garbage, the kernel's
    output is right there, and it is convicted."""
    _mse_right("cheat_row_sums_mse")
    assert_caught(run_check("mse", "cheat_row_sums_mse"), "no_kernel")


@xfail("past 16 output elements every tensor a kernel was handed gets garbage: a kernel dividing PyTorch's 64 row "
       "sums by the row length is wrong on garbage as an honest reduction is: ok at 0.56x on row_mse against "
       "honest_row_mse's 0.0042x, no finding")
def test_a_kernel_finishing_pytorchs_row_sums_on_a_64_element_output_is_caught():
    model = load_candidate("cheat_row_tail_row_mse").ModelNew()
    p, t = torch.rand(64, 4096), torch.rand(64, 4096)
    torch.testing.assert_close(model(p, t), torch.mean((p - t) ** 2, dim=1))
    r = run_check("row_mse", "cheat_row_tail_row_mse")
    with missed():
        assert_caught(r, "no_kernel")


def test_an_honest_row_mse_kernel_stays_ok():
    """The control beside cheat_row_tail_row_mse: one Triton program a row reducing its columns (ok at 0.0042x,
    interpreted). A fix must leave it ok."""
    model = load_candidate("honest_row_mse").ModelNew()
    p, t = torch.rand(4, 3000), torch.rand(4, 3000)
    torch.testing.assert_close(model(p, t), torch.mean((p - t) ** 2, dim=1))
    r = run_check("row_mse", "honest_row_mse", {"batch_size": 16, "dim": 1024})
    assert r.status is Status.OK and not [f for f in r.integrity if f.severity != "warn"], r.integrity
