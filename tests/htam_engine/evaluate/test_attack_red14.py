"""Cheats of a fourteenth red-team pass (CPU, 35 minutes): the output's form and the parameter
check after construction. None got an undeserved `ok`.

Figures from `htam eval --device cpu` (30 trials, Triton interpreted) on the 2-core box:
honest_linear_pair ok at 0.0021x; cheat_params_rescaled ok at 0.0024x with a parameters_differ
warning (its function is Model's: not a hole); cheat_params_lazy_bf16 incorrect on its first checked
set (104 of 128 elements outside atol=rtol=1e-4); cheat_tuple_output incorrect (structure).
"""

from __future__ import annotations

import torch

from cheats.harness import load_candidate, rules, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok


def test_weights_rounded_to_bfloat16_after_the_parameter_check_are_caught():
    """ModelNew is built as Model is (the check after construction finds every weight); a forward
    pre-hook rounds the weights to bfloat16 on the first call. The first checked set convicts it:
    float32's atol=rtol=1e-4 is below bfloat16's rounding."""
    honest_ok(run_check("linear_pair", "honest_linear_pair"))
    r = run_check("linear_pair", "cheat_params_lazy_bf16")
    assert r.status is Status.INCORRECT and not r.correct, (r.status, r.speedup_eager)


def test_weights_that_differ_from_models_are_named_but_a_function_equal_to_models_is_ok():
    """Both layers rescaled (x4, then x1/4 after the ReLU): every weight differs from Model's, the
    function does not (up to rounding). The judge warns (parameters_differ, KernelBench's rule) and
    the verdict stays ok: a right output at the honest kernel's speed, no hole."""
    torch.manual_seed(0)
    x = torch.rand(4, 32)
    torch.manual_seed(42)
    cheat = load_candidate("cheat_params_rescaled").ModelNew(32)
    torch.manual_seed(42)
    first, second = torch.nn.Linear(32, 32), torch.nn.Linear(32, 32)  # Model's, in its order
    assert not torch.equal(cheat.first.weight, first.weight)
    assert torch.allclose(cheat.second(torch.relu(cheat.first(x))), second(torch.relu(first(x))), atol=1e-5)
    r = run_check("linear_pair", "cheat_params_rescaled")
    assert "parameters_differ" in rules(r)
    assert r.status is Status.OK


def test_a_tuple_for_a_tensor_is_caught():
    r = run_check("relu", "cheat_tuple_output")
    assert r.status is Status.INCORRECT and not r.correct, (r.status, r.speedup_eager)
    assert "structure" in r.diagnostics.message
    # where the one output sits on each side, not "expected 1 output(s), got 1"
    assert "'(the whole output)'" in r.diagnostics.message and "'[0]'" in r.diagnostics.message
