"""The judge's own GPU memory peak in the result (issue 13): two optional GiB figures of
StageTimes, None on the CPU, carried by the one validating decoder (session/codec.py) in both
its encodings, and filled by an evaluation from torch's peak counters reset at its start."""

from __future__ import annotations

import pytest
import torch

from htam_engine.evaluate import judge as judge_module
from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.session import codec


def _result(allocated, reserved) -> EvalResult:
    r = EvalResult(status=Status.OK, device="cuda")
    r.stages.gpu_peak_allocated_gib, r.stages.gpu_peak_reserved_gib = allocated, reserved
    return r


@pytest.mark.parametrize("figures", [(41.25, 48.0), (None, None), (3, 4)])
def test_the_gpu_peak_round_trips_through_the_decoder_in_both_encodings(figures):
    r = _result(*figures)
    assert EvalResult.from_dict(r.to_dict()) == r
    schema = codec.schema_of(EvalResult)
    assert codec.decode(EvalResult, codec.encode(r), schema) == r
    assert EvalResult.from_dict(r.to_dict()).stages.gpu_peak_allocated_gib == figures[0]


def test_a_result_written_before_the_figures_existed_reads_them_as_none():
    d = _result(1.0, 2.0).to_dict()
    del d["stages"]["gpu_peak_allocated_gib"], d["stages"]["gpu_peak_reserved_gib"]
    back = EvalResult.from_dict(d)
    assert back.stages.gpu_peak_allocated_gib is None and back.stages.gpu_peak_reserved_gib is None


def test_a_figure_of_the_wrong_type_is_refused():
    d = _result(1.0, 2.0).to_dict()
    d["stages"]["gpu_peak_reserved_gib"] = "2 GiB"
    with pytest.raises(codec.CodecError):
        EvalResult.from_dict(d)


def test_the_judge_reads_torch_peak_counters_on_cuda_and_nothing_on_the_cpu(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append(("reset", device)))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3 << 30)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: 5 << 29)
    judge_module.reset_gpu_peak("cuda:0")
    assert calls == [("reset", torch.device("cuda:0"))]
    assert judge_module.gpu_peak("cuda:0") == (3.0, 2.5)
    judge_module.reset_gpu_peak("cpu")
    assert len(calls) == 1 and judge_module.gpu_peak("cpu") == (None, None)


def test_a_cpu_evaluation_leaves_the_figures_none():
    from cheats.harness import run_check

    r = run_check("relu", "honest_relu_triton", trials=1, warmup=0, check_unseen_shape=False)
    assert r.status is Status.OK, r.diagnostics.message
    assert r.stages.gpu_peak_allocated_gib is None and r.stages.gpu_peak_reserved_gib is None
