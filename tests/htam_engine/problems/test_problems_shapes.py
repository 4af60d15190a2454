"""Unseen input shapes: perturb sizes that only get_inputs uses."""

from __future__ import annotations

from problems_support import write_problem  # noqa: F401 - fixture

from htam_engine.problems import load_problem, unseen_shape_overrides, with_overrides
from htam_engine.problems.loader import layouts_bytes, load_for_judge
from htam_engine.problems.shapes import UNSEEN_GROWTH

FIXED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.w

n = 64

def get_inputs():
    return [torch.randn(n)]

def get_init_inputs():
    return [n]
"""


def test_unseen_overrides_change_input_shapes_but_not_weight_sizes():
    problem = load_problem("conv2d_relu_bias")
    unseen = unseen_shape_overrides(problem)
    assert unseen and set(unseen) <= {"batch_size", "height", "width"}
    assert all(unseen[k] > problem.constants[k] for k in unseen)
    variant = with_overrides(problem, unseen)
    assert variant.inputs[0].shape != problem.inputs[0].shape
    assert variant.inputs[0].shape[1] == problem.inputs[0].shape[1]  # in_channels feeds the weights


def test_unseen_overrides_start_from_the_problem_overrides():
    problem = load_problem("relu", {"batch_size": 16})
    assert unseen_shape_overrides(problem)["batch_size"] == 19


def test_no_unseen_overrides_when_every_size_shapes_the_weights(write_problem):
    assert unseen_shape_overrides(load_problem(write_problem(FIXED))) is None


GLOBAL_READ = FIXED.replace("return x * self.w", "return x * self.w + torch.zeros(batch, n)").replace(
    "n = 64", "n = 64\nbatch = 4\nrows = 3"
).replace("return [torch.randn(n)]", "return [torch.randn(batch, n) + rows]")


def test_sizes_the_model_reads_from_the_module_are_left_alone(write_problem):
    # `batch` is read by forward: bumping it would change the reference but not a
    # candidate's own copy, so it is no fair unseen shape; `rows` changes no shape
    assert unseen_shape_overrides(load_problem(write_problem(GLOBAL_READ))) is None


POOL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.pool = nn.AvgPool2d(k)

    def forward(self, x):
        return self.pool(x)

batch_size = 16
channels = 64
height = 2048
width = 2048

def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]

def get_init_inputs():
    return [11]
"""


def test_a_large_set_keeps_its_unseen_shape_within_a_tenth_of_its_size(write_problem):
    # 16 GiB at these sizes (drawn on the meta device only): bumping all four sizes would make
    # the unseen set 1.25x the main one, and the judge's memory peak with it
    loaded = load_for_judge(load_problem(write_problem(POOL)), "cpu")
    assert "batch_size" not in loaded.unseen_overrides  # 16 -> 19 grows the set most: dropped first
    assert loaded.unseen_overrides["height"] == 2051 and loaded.unseen_overrides["width"] == 2051
    assert layouts_bytes(loaded.unseen_input_layouts) <= UNSEEN_GROWTH * layouts_bytes(loaded.input_layouts)


def test_a_small_set_gets_every_size_bumped(write_problem):
    small = POOL.replace("height = 2048", "height = 64").replace("width = 2048", "width = 64")
    loaded = load_for_judge(load_problem(write_problem(small)), "cpu")
    assert dict(loaded.unseen_overrides) == {"batch_size": 19, "channels": 67, "height": 67, "width": 67}
