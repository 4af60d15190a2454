"""KernelBench files load unchanged and shrink with overrides so the CPU can run them."""

from __future__ import annotations

import pytest
import torch

from htam_engine.problems import instantiate, load_problem, unseen_shape_overrides
from tests.conftest import kernelbench_root

CASES = {
    "level1/19_ReLU.py": {"batch_size": 4, "dim": 256},
    "level1/95_CrossEntropyLoss.py": {"batch_size": 8},
    "level2/1_Conv2D_ReLU_BiasAdd.py": {"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 8},
}


@pytest.fixture
def kb(monkeypatch):
    root = kernelbench_root()
    if root is None:
        pytest.skip("HTAM_KERNELBENCH not set")
    monkeypatch.setenv("HTAM_KERNELBENCH", str(root))
    return root


@pytest.mark.parametrize("rel", sorted(CASES))
def test_overrides_shrink_kernelbench_problems_to_cpu_size(kb, rel):
    problem = load_problem(str(kb / rel), CASES[rel])
    assert problem.id == "kernelbench:" + rel.removesuffix(".py")
    instance = instantiate(problem)
    torch.manual_seed(0)
    model = instance.Model(*instance.get_init_inputs())
    inputs = instance.get_inputs()
    assert [list(x.shape) for x in inputs] == [t.shape for t in problem.inputs]
    assert all(x.numel() < 100_000 for x in inputs)
    out = model(*inputs)
    assert torch.isfinite(out).all()
    assert unseen_shape_overrides(problem)


def test_derived_kernelbench_constants_follow(kb):
    problem = load_problem(str(kb / "level2/1_Conv2D_ReLU_BiasAdd.py"), {"out_channels": 4, "height": 8})
    assert problem.constants["bias_shape"] == [4, 1, 1]
    assert problem.constants["width"] == 128  # `height = width = 128`: only height was set


def test_kernelbench_ref_resolves_under_the_checkout(kb):
    problem = load_problem("kernelbench:level1/19_ReLU", {"batch_size": 2, "dim": 8})
    assert problem.inputs[0].shape == [2, 8] and problem.level == 1
