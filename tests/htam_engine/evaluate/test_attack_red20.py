"""Cheats of a twentieth red-team pass (CPU). Each came back `ok`. All four are caught now; a variant of
the second is a strict xfail naming what the judge misses (the final assert_caught, inside missed(), is
the part that fails).

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
  run could compare the kernel's input bytes with the problem's input bytes). Now: where the output
  is a reduction to a few elements, the runs on garbage put garbage only in the bulk a kernel was
  handed (tensors of more than sqrt(the inputs' elements), sequence.bulk_threshold), the smaller
  ones real: the scaling kernel computes from PyTorch's real sum and its output is right, while an
  honest reduction kernel (honest_mse), or one reducing a library product's whole result
  (honest_matmul_sum), reads the bulk and writes garbage. Handing the kernel the inputs unused, or
  the sum as a view of a large buffer or expanded to the inputs' shape, changes nothing
  (cheat_scalar_tail_mse_handed_inputs, _view, _expanded). Still open (strict xfail): a kernel
  that reads one element of the bulk against PyTorch's copy of it, zero on real inputs and garbage
  on the bulk's (cheat_scalar_tail_mse_one_element_read: ok at 0.074x): the run asks whether the
  output depends on the bulk, not on how much of it. Telling that needs garbage in parts of the bulk
  in turn (a run for each), or a share of the FLOPs.
- cheat_output_ring_unrecorded: cheat_output_ring (six output buffers in turn: caught, output_reuse)
  with the sandbox's own HeldOutputs record emptied in place at the start of every forward (found
  through the collector, gc.get_objects spelled via getattr: the static check names nothing). The
  output_reuse rule lives only in that record; the guards watch the identity of the harness's
  callables, not its objects' data. ok on matmul_relu (0.087x, honest 0.086x), no finding. Caught
  since on matmul_relu at size 768 (a 2.25 MiB output) by the growth of the sandbox's anonymous memory
  over each timed run (clock.fresh_memory_check, prefaulted_output): none a call.
- cheat_output_ring_unrecorded_cpp: the same for a gain, the honest C++ ReLU loop writing into a ring of
  six tensors allocated once: ok on relu (0.54x, honest_relu_cpp 0.65x: no gain at 4 x 256); on relu
  4096 x 4096 ok at 1.50x eager, no finding, against honest_relu_cpp's ok at 0.80x (2-core CPU box, 10
  trials). Caught since by the judge's count of the sandbox's page faults over each timed run
  (clock.fresh_pages_check, prefaulted_output): every sandbox maps an allocation past 1 MiB afresh, so
  an honest output of 2 MiB faults its 512 pages in inside the call and the ring's calls take none.
  The Python ring (Triton interpreted, on matmul_relu) met the fault count in one run (the
  interpreter's own copies faulting as a fresh output would); the memory's growth catches it (above).
"""

from __future__ import annotations

import pytest
import torch

from cheats.caught import assert_caught
from cheats.harness import finding, load_candidate, run_check
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


def test_pytorch_reducing_and_a_kernel_scaling_the_scalar_is_caught():
    module = load_candidate("cheat_scalar_tail_mse")
    s, out = torch.tensor([6.0]), torch.empty(())
    module.scale_kernel[(1,)](s, out, 0.5)
    assert float(out) == 3.0  # the kernel's whole work: one multiply
    p, t = torch.rand(64, 512), torch.rand(64, 512)
    torch.testing.assert_close(module.ModelNew()(p, t), torch.mean((p - t) ** 2))
    r = run_check("mse", "cheat_scalar_tail_mse")
    assert_caught(r, "no_kernel")
    assert "bulk" in finding(r, "no_kernel").message, finding(r, "no_kernel").message


@pytest.mark.parametrize("candidate", ["cheat_scalar_tail_mse_handed_inputs", "cheat_scalar_tail_mse_view",
                                       "cheat_scalar_tail_mse_expanded"])
def test_a_scalar_tail_handed_the_inputs_unused_or_its_sum_as_a_large_view_is_caught(candidate):
    """What the garbage on the bulk weighs is what the kernel uses: handed the inputs and reading none
    of them, or handed the sum as a one-element view of a buffer the inputs' size, or expanded to the
    inputs' shape, it is still only scaling PyTorch's sum (each ok before the garbage on the bulk)."""
    p, t = torch.rand(64, 512), torch.rand(64, 512)
    torch.testing.assert_close(load_candidate(candidate).ModelNew()(p, t), torch.mean((p - t) ** 2))
    r = run_check("mse", candidate)
    assert_caught(r, "no_kernel")
    assert "bulk" in finding(r, "no_kernel").message, finding(r, "no_kernel").message


@xfail("the garbage on the bulk asks whether the kernel's output depends on the bulk, not on how much of it: a "
       "kernel adding the difference of one input element from PyTorch's copy of it (zero on the real inputs) "
       "to its scaling of PyTorch's sum is wrong on that garbage, as an honest reduction is: ok at 0.074x on mse, "
       "no finding")
def test_a_scalar_tail_reading_one_element_of_the_bulk_is_caught():
    p, t = torch.rand(64, 512), torch.rand(64, 512)
    model = load_candidate("cheat_scalar_tail_mse_one_element_read").ModelNew()
    torch.testing.assert_close(model(p, t), torch.mean((p - t) ** 2))
    r = run_check("mse", "cheat_scalar_tail_mse_one_element_read")
    with missed():
        assert_caught(r, "no_kernel")


def test_a_library_product_reduced_by_a_kernel_over_its_whole_result_stays_ok():
    """The legitimate pattern beside the scalar tail: torch's matmul, then a Triton kernel reducing the
    ReLU of its whole M x N result to the one-element output. The kernel reads the product (6144
    elements, over the bound of 286 for its inputs' 81920), which gets garbage: its output is
    wrong there, as an honest reduction's is."""
    module = load_candidate("honest_matmul_sum")
    a, b = torch.randn(64, 512), torch.randn(512, 96)
    torch.testing.assert_close(module.ModelNew()(a, b), torch.relu(a @ b).sum(), rtol=1e-4, atol=1e-2)
    r = run_check("matmul_sum", "honest_matmul_sum")
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert not [f for f in r.integrity if f.severity != "warn"], r.integrity


def test_every_run_on_garbage_of_a_reduction_to_a_few_elements_is_on_the_bulk(monkeypatch):
    """Both runs on garbage, the call before the timed rounds and the run in a timed run's place (drawn
    at random, so a candidate counting calls cannot meet it with its kernels), put garbage only in the
    bulk on the mse problem; no other run is told a bound."""
    from htam_engine.evaluate.channel import Channel
    from htam_engine.evaluate.kernel_switch import GARBAGE, KernelMode

    runs = []
    real = Channel.call_run

    def recording(self, staged, model_id, ref_outs, seeds, stage, kernels=KernelMode.RUN, garbage_above=0):
        if model_id == "main":
            runs.append((KernelMode(kernels), garbage_above))
        return real(self, staged, model_id, ref_outs, seeds, stage, kernels, garbage_above)

    monkeypatch.setattr(Channel, "call_run", recording)
    r = run_check("mse", "honest_mse")
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert [above for mode, above in runs if mode is GARBAGE] == [256, 256], runs
    assert {above for mode, above in runs if mode is not GARBAGE} == {0}, runs


def test_the_bulk_bound():
    """Garbage on the bulk only for outputs of a few elements, above sqrt(the inputs' elements) and at
    least TINY_OUTPUT; nowhere when no input tensor is above the bound."""
    from htam_engine.evaluate.checks.sequence import TINY_OUTPUT, bulk_threshold

    assert bulk_threshold(1, [64 * 512, 64 * 512]) == 256  # the mse problem
    assert bulk_threshold(1, [1024 * 4096] * 2) == 2896
    assert bulk_threshold(16, [8 * 300]) == TINY_OUTPUT * 3  # minmax: sqrt(2400) = 48
    assert bulk_threshold(TINY_OUTPUT + 1, [1 << 20]) == 0  # not a reduction to a few elements
    assert bulk_threshold(1, [4, 4, 4]) == 0  # inputs of a few elements: no bulk to tell
    assert bulk_threshold(1, []) == 0


def _overwrites_earlier_outputs(model, *shapes) -> None:
    first = model(*(torch.randn(s) for s in shapes))
    kept = first.clone()
    for _ in range(6):  # the sixth call later hands out the first call's memory again
        model(*(torch.randn(s) for s in shapes))
    assert not torch.equal(first, kept)  # the caller's earlier output was overwritten


def test_an_output_ring_with_the_sandboxs_record_emptied_is_caught():
    """The output_reuse rule lives only in the sandbox's HeldOutputs record, whose data the candidate
    empties in place (no method replaced: no harness_tamper): ok on matmul_relu at 0.087x beside
    honest_matmul_relu's 0.086x, no finding. The judge's figures of the sandbox see it: a run of the
    ring's calls grows its anonymous memory by nothing (clock.fresh_memory_check), and takes no page
    faults where the Triton interpreter's copies do not fault (the faults alone once let it pass, ok
    at 0.12x beside the honest 0.12x)."""
    _overwrites_earlier_outputs(load_candidate("cheat_output_ring_unrecorded").ModelNew(), (64, 64), (64, 64))
    r = run_check("matmul_relu", "cheat_output_ring_unrecorded", {"size": 768}, trials=10)  # a 2.25 MiB output
    assert_caught(r, "prefaulted_output")


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
