"""C++ candidates pass the real harness on the CPU (three distinct sources: each compile costs ~20 s).

1. the app's demo problem (an elementwise chain with broadcast parameters) at its default
   settings (vectorisable polynomial exp/tanh): ok, with a speedup measured (whether it beats
   eager depends on the machine's load: `tests/bench/cpu_offline.py` prints that figure);
2. a layer norm with affine parameters through single-pass Welford (row.pass=online), of rows far from zero;
3. an RMS norm over the channel dimension of an NCHW tensor (the inner > 1 layout, 4 accumulators).
"""

from __future__ import annotations

import pytest

from htam_engine.evaluate import EvalConfig, Status, evaluate
from htam_engine.problems import load_problem
from htam_engine.problems.builtin import DEMO_PROBLEM
from htam_engine.propose.offline import Knob, generate

from offline_support import RMS_CHANNELS, write_problem


def _config(**kw) -> EvalConfig:
    base = dict(backend="cpp", timeout_s=900.0, trials=7, warmup=2, time_compile_baseline=False)
    base.update(kw)
    return EvalConfig(**base)


@pytest.mark.slow
def test_demo_problem_is_ok_with_a_measured_speedup():
    problem = load_problem(DEMO_PROBLEM, {"batch_size": 1024, "features": 1024})
    g = generate(problem, "cpp")
    assert "htam_exp" in g.code and "#pragma omp simd" in g.code
    result = evaluate(problem, g.code, _config())
    assert result.status is Status.OK, (result.diagnostics.message, result.diagnostics.log[-2000:])
    assert result.speedup_eager is not None and result.speedup_eager > 0, result.to_dict()


@pytest.mark.slow
def test_layer_norm_single_pass_welford_is_ok_on_rows_far_from_zero(tmp_path):
    # builtin:layernorm (weights 0.5-1.5) with its rows centred near -200, as the judge's shifted-down
    # set makes them: a mean accumulated in float32 over a row of 768 drifts by ~1e-4, past float32's
    # tolerance at hundreds of outputs; KernelBench's own check of get_inputs sees it.
    builtin = load_problem("layernorm")
    far = builtin.source.replace("* 2.0 + 1.0", "* 2.0 - 200.0")
    assert far != builtin.source
    (tmp_path / "layernorm_far.py").write_text(far)
    problem = load_problem(str(tmp_path / "layernorm_far.py"), {"batch_size": 4})
    g = generate(problem, "cpp", "online_reduction")
    assert "accmean" in g.code  # the Welford accumulators
    result = evaluate(problem, g.code, _config(trials=3))
    assert result.status is Status.OK, (result.diagnostics.message, result.diagnostics.log[-2000:])


@pytest.mark.slow
def test_rms_norm_over_channels_is_ok(tmp_path):
    problem = write_problem(tmp_path, "rms_channels", RMS_CHANNELS, "[torch.randn(batch, 16, height, 24)]", "[16]",
                            consts="batch = 4\nheight = 20")
    g = generate(problem, "cpp", "vector_width")
    assert g.settings[Knob.ROW_VEC] == 4
    result = evaluate(problem, g.code, _config(trials=3))
    assert result.status is Status.OK, (result.diagnostics.message, result.diagnostics.log[-2000:])
