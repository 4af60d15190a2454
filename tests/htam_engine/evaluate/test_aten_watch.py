"""aten_watch: an output that holds what an ATen operator returned gets what the operator computes
from the real values; one the function's own work changed stays as it is."""

from __future__ import annotations

import torch

from htam_engine.evaluate.aten_watch import AtenWatch


def sets(*shape: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(garbage the function is handed, the real values kept for it)."""
    g = torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=g) * 3 + 2, torch.rand(*shape, generator=g)


def test_an_operators_result_viewed_or_reshaped_gets_its_real_values():
    x, real = sets(4, 8)
    with AtenWatch() as watch:
        out = torch.softmax(x.unsqueeze(0), 2).squeeze(0)  # a view into the handed input, a view out
    watch.made_real(out, [x], [real])
    assert torch.allclose(out, torch.softmax(real, 1))


def test_a_copy_within_the_tolerance_counts_as_the_operators_result():
    x, real = sets(4, 8)
    with AtenWatch() as watch:
        p = torch.softmax(x, 1)
    out = (p * (1 + 1e-6)).reshape(32)  # outside the watch: the function's own "work", a rounding
    watch.made_real(out, [x], [real])
    assert torch.allclose(out, torch.softmax(real, 1).reshape(32))


def test_a_chain_of_operators_is_replayed_on_the_real_values():
    (a, real_a), (b, real_b) = sets(6, 5), sets(6, 5)
    b, real_b = b * 0.5, real_b * 0.5
    with AtenWatch() as watch:
        out = torch.nn.functional.mse_loss(a, b, reduction="none").mean((0, 1), keepdim=True).squeeze()
    watch.made_real(out, [a, b], [real_a, real_b])
    assert torch.allclose(out, torch.nn.functional.mse_loss(real_a, real_b))


def test_an_out_variant_into_the_functions_own_buffer_is_replayed():
    x, real = sets(4, 8)
    buffer = torch.empty(4, 8)
    with AtenWatch() as watch:
        torch.exp(x, out=buffer)
    watch.made_real(buffer, [x], [real])
    assert torch.allclose(buffer, torch.exp(real))


def test_work_of_the_functions_own_stays_and_the_kept_copy_is_untouched():
    x, real = sets(4, 8)
    real -= 0.5  # negatives, which an in-place ReLU would change
    kept = real.clone()
    with AtenWatch() as watch:
        p = torch.matmul(x, x.T)
    p[p > p.median()] = 0.0  # its own epilogue changes half of the product
    left = p.clone()
    watch.made_real(p, [x], [real])
    assert torch.equal(p, left)
    with AtenWatch() as watch:
        y = x.relu_()  # an in-place operator replayed on a copy of the real values, never on them
    watch.made_real(y, [x], [real])
    assert torch.equal(real, kept)


def test_an_operator_written_in_prims_is_recorded_and_replayed():
    x, real = sets(4, 8)
    prims = torch.ops.prims
    with AtenWatch() as watch:
        out = prims.exp(prims.mul(x, 0.5))
    watch.made_real(out, [x], [real])
    assert torch.allclose(out, torch.exp(real * 0.5))


def test_python_of_the_candidates_run_inside_the_call_is_noted_and_the_harness_own_is_not():
    x, _ = sets(4, 8)
    with AtenWatch() as watch:
        torch.softmax(x, 1)  # PyTorch's own Python and the watch's generated code only
    assert watch.python_ran == ""

    def candidate_function(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    with AtenWatch() as watch:
        candidate_function(x)
    assert "candidate_function" in watch.python_ran


def softmax_on_a_thread_watched() -> AtenWatch:
    """A watch around a call that runs softmax on a thread of its own and joins it."""
    import threading

    x = torch.randn(8, 16)
    with AtenWatch() as watch:
        worker = threading.Thread(target=lambda: torch.softmax(x, 1))
        worker.start()
        worker.join()
    return watch


def test_an_operator_on_another_thread_is_hidden_and_one_the_mode_saw_is_not():
    """The dispatch mode is the calling thread's; the global trace beside it sees every thread. An
    operator it saw at the top of the call of which the mode saw nothing is `hidden`; one the mode saw,
    itself or an operator below it (matmul decomposes to mm above the Python key), is not."""
    assert softmax_on_a_thread_watched().hidden == ["aten::softmax"]
    x = torch.randn(8, 16)
    with AtenWatch() as watch:
        torch.softmax(x, 1)
        torch.matmul(x, x.t())
        torch.empty(3)  # plumbing is never counted
    assert watch.hidden == [] and {"aten::_softmax", "aten::mm"} <= watch.seen


def test_an_observer_the_candidate_registered_first_does_not_take_the_trace(tmp_path):
    """One execution trace observer a process: a candidate's, registered at import, would have taken
    the trace into its own file; the watch removes it before adding its own."""
    torch._C._profiler._add_execution_trace_observer(str(tmp_path / "theirs.json"))
    assert softmax_on_a_thread_watched().hidden == ["aten::softmax"]
