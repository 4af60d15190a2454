"""On a CUDA GPU: CUDA and Triton candidates under several moves pass the harness (skipped without one)."""

from __future__ import annotations

import pytest

from htam_engine.evaluate import EvalConfig, Status, evaluate
from htam_engine.problems import load_problem
from htam_engine.propose.offline import Unsupported, generate

CASES = [
    ("relu", "vector_width"),
    ("affine_gelu_scale", "fast_math"),
    ("scale_bias_sigmoid_mul", "persistent_grid"),
    ("softmax", "online_reduction"),
    ("layernorm", "two_pass"),
    ("rmsnorm", "vector_width"),
    ("mean_reduce", "fuse_chain"),
    ("matmul_bias_gelu", "fuse_chain"),
]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize(("name", "move"), CASES)
def test_gpu_candidates_pass_the_harness(name, move, backend):
    problem = load_problem(name, device="cuda")
    try:
        g = generate(problem, backend, move)
    except Unsupported:
        g = generate(problem, backend)  # the move does not touch this problem on this backend
    config = EvalConfig(backend=backend, device="cuda", trials=10, warmup=3, timeout_s=900.0,
                        time_compile_baseline=False, overrides=dict(problem.overrides))
    result = evaluate(problem, g.code, config)
    assert result.status is Status.OK, (result.diagnostics.message, result.diagnostics.log[-3000:])
