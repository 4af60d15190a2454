"""On a CUDA GPU: CUDA and Triton candidates are evaluated end to end, and a kernel that
corrupts the CUDA context costs one worker, not the caller. Skipped without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.evaluator import Evaluator
from htam_engine.evaluate.result import Status

pytestmark = pytest.mark.gpu

GPU_CANDIDATES = Path(__file__).resolve().parents[2] / "bench" / "gpu_candidates"


def _config(**kw) -> EvalConfig:
    return EvalConfig(device="cuda", timeout_s=600, trials=20, warmup=3, **kw)


@pytest.fixture(scope="module")
def gpu_evaluator():
    ev = Evaluator("cuda")
    yield ev
    ev.close()


@pytest.fixture(scope="module")
def relu_problem():
    from htam_engine.problems import load_problem

    return load_problem("relu", device="cuda")


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_gpu_candidate_is_ok_and_timed_with_events(gpu_evaluator, relu_problem, backend):
    code = (GPU_CANDIDATES / f"relu_{backend}.py").read_text()
    r = gpu_evaluator.evaluate(relu_problem, code, _config())
    assert r.status is Status.OK, (r.diagnostics.message, r.diagnostics.log[-2000:])
    assert r.backend == backend and r.device == "cuda"
    assert len(r.timings) == 20 and all(t > 0 for t in r.timings)
    assert r.speedup_eager and r.speedup_eager > 0.5  # a memory-bound ReLU is about as fast as eager


def test_illegal_memory_access_is_a_runtime_error_and_the_next_evaluation_works(gpu_evaluator, relu_problem):
    code = (GPU_CANDIDATES / "relu_triton.py").read_text()
    wild = code.replace("tl.store(y_ptr + offs, tl.where(x < 0.0, 0.0, x), mask=mask)",
                        "tl.store(y_ptr + offs + (1 << 40), tl.where(x < 0.0, 0.0, x))")
    assert wild != code
    r = gpu_evaluator.evaluate(relu_problem, wild, _config())
    assert r.status is Status.RUNTIME_ERROR
    after = gpu_evaluator.evaluate(relu_problem, code, _config())
    assert after.status is Status.OK, after.diagnostics.message
