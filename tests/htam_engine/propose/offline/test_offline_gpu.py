"""On a CUDA GPU: CUDA and Triton candidates from several templates pass the harness (skipped without one)."""

from __future__ import annotations

import pytest

from htam_engine.evaluate import EvalConfig, Status, evaluate
from htam_engine.problems import load_problem
from htam_engine.propose.offline import generate

CASES = [
    ("relu", "ew_fused_vec4"),
    ("affine_gelu_scale", "ew_fast_math"),
    ("scale_bias_sigmoid_mul", "ew_grid_stride"),
    ("softmax", "row_reduce_online"),
    ("layernorm", "row_reduce_warp"),
    ("rmsnorm", "row_reduce_vec4"),
    ("mean_reduce", "row_reduce_block"),
    ("matmul_bias_gelu", "epilogue_fused"),
]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize(("name", "template"), CASES)
def test_gpu_candidates_pass_the_harness(name, template, backend):
    problem = load_problem(name, device="cuda")
    g = generate(problem, backend, template)
    config = EvalConfig(backend=backend, device="cuda", trials=10, warmup=3, timeout_s=900.0,
                        time_compile_baseline=False, overrides=dict(problem.overrides))
    result = evaluate(problem, g.code, config)
    assert result.status is Status.OK, (result.diagnostics.message, result.diagnostics.log[-3000:])
