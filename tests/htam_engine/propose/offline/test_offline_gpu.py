"""On a CUDA GPU: CUDA and Triton candidates under several moves pass the harness (skipped without one)."""

from __future__ import annotations

import importlib.util

import pytest

from htam_engine.evaluate import EvalConfig, Status, evaluate
from htam_engine.problems import load_problem
from htam_engine.propose.offline import Unsupported, generate
from htam_engine.propose.offline.space import Knob

from offline_support import CONV_EW_TAIL, write_problem

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


@pytest.mark.gpu
@pytest.mark.slow
def test_a_convolution_tail_reading_a_channels_last_result_computes_the_tail_of_that_result(tmp_path):
    """cuDNN's channels-last float32 convolution (TF32 by default) rounds differently from its NCHW
    one, so against the problem's Model it passes or fails by the tolerance (the search measures
    both layouts). What the generator owns is the tail: read by strides on the GPU, its output is
    the tail of the very channels-last result, in the reference's NCHW layout."""
    import torch

    problem = write_problem(tmp_path, "conv_tail", CONV_EW_TAIL.format(conv="Conv2d", extra=1),
                            "[torch.randn(8, 16, 64, 64)]", "[16, 32, (32, 1, 1)]")
    problem = load_problem(problem.path, device="cuda")
    g = generate(problem, "triton", None, {Knob.CONV_LAYOUT: "channels_last"})
    assert "_channels_last(x)" in g.code
    # Triton's JIT reads its kernels' source from a file: the module is imported from one
    module_path = tmp_path / "channels_last_candidate.py"
    module_path.write_text(g.code)
    spec = importlib.util.spec_from_file_location("channels_last_candidate", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(3)
    model = module.ModelNew(16, 32, (32, 1, 1)).cuda()
    x = torch.randn(8, 16, 64, 64, device="cuda")
    with torch.no_grad():
        out = model(x)
        conv = model.conv(x.contiguous(memory_format=torch.channels_last))
        expected = torch.nn.functional.hardswish(torch.relu(conv) + model.bias) * model.extra
    assert out.is_contiguous()
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
