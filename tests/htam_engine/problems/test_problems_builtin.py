"""The built-in suite: every problem loads, runs eagerly on the CPU quickly, and names real GPU sizes."""

from __future__ import annotations

import ast
import time
from collections import Counter

import pytest
import torch

from htam_engine.families import Family
from htam_engine.problems import DEMO_PROBLEM, builtin_names, builtin_path, instantiate, load_problem
from htam_engine.problems.loader import gpu_sizes
from htam_engine.problems.overrides import top_level_assigned


def test_suite_has_at_least_30_problems_over_three_levels():
    names = builtin_names()
    assert len(names) >= 30
    levels = Counter(load_problem(n).level for n in names)
    assert set(levels) == {1, 2, 3} and min(levels.values()) >= 5
    assert DEMO_PROBLEM in names


def _cpu_seconds(fn, repeats: int = 3) -> float:
    """Best CPU time of fn on one thread: the CPU is shared, so wall time would measure the neighbours."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


def test_every_builtin_loads_and_runs_eagerly_within_50ms_of_one_core():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    slow = {}
    try:
        for name in builtin_names():
            problem = load_problem(name)
            assert problem.id == f"builtin:{name}" and problem.inputs
            instance = instantiate(problem)
            model = instance.Model(*instance.get_init_inputs())
            inputs = instance.get_inputs()
            assert [list(x.shape) for x in inputs] == [t.shape for t in problem.inputs]
            with torch.no_grad():
                out = model(*inputs)
                elapsed = _cpu_seconds(lambda: model(*inputs))
            assert torch.isfinite(out).all(), name
            if elapsed > 0.05:
                slow[name] = round(elapsed, 3)
    finally:
        torch.set_num_threads(threads)
    assert not slow, f"eager forward over 50 ms of CPU: {slow}"


@pytest.mark.parametrize("name", builtin_names())
def test_gpu_sizes_keys_are_module_constants(name):
    source = builtin_path(name).read_text()
    sizes = gpu_sizes(source)
    assert sizes, f"{name} has no GPU_SIZES"
    assert set(sizes) <= top_level_assigned(ast.parse(source)) - {"GPU_SIZES"}


def test_cuda_device_applies_gpu_sizes_under_explicit_overrides():
    cpu = load_problem(DEMO_PROBLEM)
    gpu = load_problem(DEMO_PROBLEM, device="cuda")
    sizes = gpu_sizes(builtin_path(DEMO_PROBLEM).read_text())
    assert gpu.overrides == sizes
    assert gpu.inputs[0].shape == [sizes["batch_size"], sizes["features"]] != cpu.inputs[0].shape
    mixed = load_problem(DEMO_PROBLEM, {"batch_size": 4}, device="cuda")
    assert mixed.inputs[0].shape == [4, sizes["features"]]


def test_builtin_refs_by_name_prefix_and_path_agree():
    by_name = load_problem("relu")
    assert load_problem("builtin:relu").id == by_name.id == "builtin:relu"
    assert load_problem(str(builtin_path("relu"))).id == "builtin:relu"


def test_suite_mixes_families_and_input_kinds():
    problems = [load_problem(n) for n in builtin_names()]
    families = {p.family for p in problems}
    assert {Family.ELEMENTWISE, Family.REDUCTION, Family.NORMALIZATION, Family.MATMUL, Family.CONVOLUTION,
            Family.ATTENTION, Family.FUSED_CHAIN, Family.WHOLE_MODEL} <= families
    dtypes = {t.dtype for p in problems for t in p.inputs}
    assert {"float32", "int64", "bool"} <= dtypes
    sources = " ".join(builtin_path(n).read_text() for n in builtin_names())
    assert "torch.rand(" in sources and "torch.randn(" in sources
