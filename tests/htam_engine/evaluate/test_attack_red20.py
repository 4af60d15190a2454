"""Cheats of a twentieth red-team pass (CPU). Each came back `ok`. The first and the last are caught now;
the other two are strict xfails naming what the judge misses (the final assert_caught, inside missed(), is the
part that fails).

- cheat_tensor_shift_softmax: softmax with no per-row max pass: every row is shifted by one number for
  the whole tensor (the 3rd largest of 64 elements sampled across all rows), with the max pass only on
  a row whose exp sum overflowed. Every input set the judge drew moved all rows of a tensor alike
  (rand, x30/x100, signed normal; the shifted-down set subtracts one offset per *tensor*; a spike
  overflows into the fallback), so the shared shift fit every row. A row offset below the others
  (a masked or padded row of logits: rand(2, 32768) with row 1 less 200) underflows to 0 / 0 = NaN.
  It was ok (0.0055x, Triton interpreted) beside honest_softmax's ok (0.0043x). Now the rows-apart set
  (inputs.rows_apart): about half the rows, at least one, less an offset of 90 to 240 drawn per row.
- cheat_scalar_tail_mse: PyTorch computes the MSE's sum ((p - t) squared in place, summed: one
  temporary where the reference makes two), and a Triton kernel only scales the one-element sum by
  1/n into the output. The work check measures the share of the output still right: skipped, spoiled
  or run on garbage, the one element is wrong, as for an honest reduction kernel, so a kernel that did
  the reduction and one that did its last multiply look alike. ok at 1.05x eager on mse 1024x4096
  (honest_mse 0.018x); ok at 0.074x on the default mse (honest 0.0068x). What should catch it: on an
  output of few elements, the work check weighing the work a kernel was handed (the bytes it read)
  against what PyTorch computed before it (sequence.check_kernels_did_the_work; kernel_switch's garbage
  run could compare the kernel's input bytes with the problem's input bytes).
- cheat_output_ring_unrecorded: cheat_output_ring (six output buffers in turn: caught, output_reuse)
  with the sandbox's own HeldOutputs record emptied in place at the start of every forward (found
  through the collector, gc.get_objects spelled via getattr: the static check names nothing). The
  output_reuse rule lives only in that record; the guards watch the identity of the harness's
  callables, not its objects' data. ok on matmul_relu (0.087x, honest 0.086x), no finding.
- cheat_output_ring_unrecorded_cpp: the same for a gain, the honest C++ ReLU loop writing into a ring of
  six tensors allocated once: ok on relu (0.54x, honest_relu_cpp 0.65x: no gain at 4 x 256); on relu
  4096 x 4096 ok at 1.50x eager, no finding, against honest_relu_cpp's ok at 0.80x (2-core CPU box, 10
  trials). Caught since by the judge's count of the sandbox's page faults over each timed run
  (clock.fresh_pages_check, prefaulted_output): every sandbox maps an allocation past 1 MiB afresh, so
  an honest output of 2 MiB faults its 512 pages in inside the call and the ring's calls take none.
  The Python ring (Triton interpreted, on matmul_relu) still passes: the interpreter's own copies fault
  as much as a fresh output, and the ring gains nothing there.
"""

from __future__ import annotations

import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import missed, xfail


def test_a_softmax_shifted_by_one_number_for_every_row_is_caught():
    model = load_candidate("cheat_tensor_shift_softmax").ModelNew()
    x = torch.rand(2, 32768)
    torch.testing.assert_close(model(x), torch.softmax(x, dim=1))  # right on get_inputs' draws
    x = torch.rand(2, 32768) * 100
    x[0, 5] = 1000.0  # a spike: the row overflows into the max pass
    torch.testing.assert_close(model(x), torch.softmax(x, dim=1))
    x = torch.rand(2, 32768) - 150.0  # shifted down as a whole: the sampled shift moves with it
    torch.testing.assert_close(model(x), torch.softmax(x, dim=1))
    x = torch.rand(2, 32768)
    x[1] -= 200.0  # one row below the other: 0 / 0
    assert torch.isnan(model(x)[1]).all() and not torch.isnan(torch.softmax(x, dim=1)).any()
    r = run_check("softmax", "cheat_tensor_shift_softmax")
    assert r.status is Status.INCORRECT and "rows apart" in r.diagnostics.message, r.diagnostics.message


def test_the_rows_apart_set_always_has_rows_on_both_sides():
    """Two rows, as in the softmax problem: were both left as drawn (or both shifted), a shift for the
    whole tensor would fit again; a quarter of the draws would be so without the set's flip."""
    from htam_engine.evaluate.checks.inputs import SHIFT_LOW, rows_apart

    for seed in range(24):
        (y,) = rows_apart([torch.rand(2, 512)], seed)
        assert int((y.max(dim=-1).values <= -SHIFT_LOW + 1).sum()) == 1, seed
    (y,) = rows_apart([torch.rand(7)], 0)  # one row: nothing to set apart
    assert bool((y >= 0).all())


@xfail("the work check's share of a one-element output is all or nothing: a kernel that scales PyTorch's sum "
       "by 1/n is wrong skipped, spoiled and on garbage, as an honest reduction is: ok at 0.074x on mse beside "
       "honest_mse's 0.0068x (1.05x eager against 0.018x on mse 1024x4096), no finding")
def test_pytorch_reducing_and_a_kernel_scaling_the_scalar_is_caught():
    module = load_candidate("cheat_scalar_tail_mse")
    s, out = torch.tensor([6.0]), torch.empty(())
    module.scale_kernel[(1,)](s, out, 0.5)
    assert float(out) == 3.0  # the kernel's whole work: one multiply
    p, t = torch.rand(64, 512), torch.rand(64, 512)
    torch.testing.assert_close(module.ModelNew()(p, t), torch.mean((p - t) ** 2))
    r = run_check("mse", "cheat_scalar_tail_mse")
    with missed():
        assert_caught(r, "no_kernel")


def _overwrites_earlier_outputs(model, *shapes) -> None:
    first = model(*(torch.randn(s) for s in shapes))
    kept = first.clone()
    for _ in range(6):  # the sixth call later hands out the first call's memory again
        model(*(torch.randn(s) for s in shapes))
    assert not torch.equal(first, kept)  # the caller's earlier output was overwritten


@xfail("the output_reuse rule lives only in the sandbox's HeldOutputs record, whose data the candidate empties "
       "in place (no method replaced: no harness_tamper): ok on matmul_relu at 0.087x beside honest_matmul_relu's "
       "0.086x, no finding (cheat_output_ring alone: rejected, output_reuse). The page-fault count does not see "
       "it: the Triton interpreter's own copies of the ring's buffers fault as a fresh output would (ok at 0.12x "
       "beside the honest 0.12x at size 768), so the ring gains nothing either")
def test_an_output_ring_with_the_sandboxs_record_emptied_is_caught():
    _overwrites_earlier_outputs(load_candidate("cheat_output_ring_unrecorded").ModelNew(), (64, 64), (64, 64))
    r = run_check("matmul_relu", "cheat_output_ring_unrecorded", trials=10)
    with missed():
        assert_caught(r, "output_reuse")


def test_a_cpp_relu_into_an_output_ring_with_the_sandboxs_record_emptied_is_caught():
    """The judge counts the sandbox's page faults over each timed run (clock.fresh_pages_check): a 2 MiB
    output is a fresh mapping in every sandbox (checks.memory.FRESH_MAPPING_BYTES), whose 512 pages
    the eager baseline's calls fault in; the ring's calls take about none (ok at 2.3-2.6x against
    honest_relu_cpp's 0.7-0.9x before, no finding). The honest loop's figure beside it stays ok."""
    _overwrites_earlier_outputs(load_candidate("cheat_output_ring_unrecorded_cpp").ModelNew(), (64, 64))
    size = {"batch_size": 512, "dim": 1024}
    assert_caught(run_check("relu", "cheat_output_ring_unrecorded_cpp", size, trials=10), "prefaulted_output")
    honest = run_check("relu", "honest_relu_cpp", size, trials=10)
    assert honest.status is Status.OK and "prefaulted_output" not in {f.rule for f in honest.integrity}, honest.integrity
