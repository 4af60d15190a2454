"""--set NAME=VALUE: parsing, and overrides applied while the module's top level runs."""

from __future__ import annotations

import pytest
import torch

from htam_engine.errors import UsageError
from problems_support import write_problem  # noqa: F401 - fixture

from htam_engine.problems import ProblemError, instantiate, load_problem, parse_overrides

DERIVED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, out_channels, bias_shape):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(bias_shape))

    def forward(self, x, labels, flags):
        return x + self.bias

batch_size = 2
out_channels = 16
height = width = 12
bias_shape = (out_channels, 1, 1)
num_classes = 10
debug: bool = False

def get_inputs():
    return [
        torch.rand(batch_size, out_channels, height, width),
        torch.randint(0, num_classes, (batch_size,)),
        torch.rand(batch_size) > 0.5,
    ]

def get_init_inputs():
    return [out_channels, bias_shape]
"""


def test_parse_overrides_reads_literals_and_keeps_other_text_as_strings():
    got = parse_overrides(["batch_size=16", "shape=(4, 1, 1)", "eps=1e-5", "flag=True", "mode=fast"])
    assert got == {"batch_size": 16, "shape": (4, 1, 1), "eps": 1e-5, "flag": True, "mode": "fast"}


@pytest.mark.parametrize("item", ["batch_size", "=3", "1x=2", "a b=3"])
def test_parse_overrides_rejects_malformed_items(item):
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_overrides([item])


def test_derived_constant_follows_the_override(write_problem):
    problem = load_problem(write_problem(DERIVED), {"out_channels": 4})
    assert problem.constants["bias_shape"] == [4, 1, 1]
    assert problem.inputs[0].shape == [2, 4, 12, 12]
    assert problem.overrides == {"out_channels": 4}


def test_chained_assignment_overrides_only_the_named_target(write_problem):
    problem = load_problem(write_problem(DERIVED), {"height": 8})
    assert problem.inputs[0].shape == [2, 16, 8, 12]
    assert problem.constants["width"] == 12


def test_annotated_constant_can_be_overridden(write_problem):
    assert load_problem(write_problem(DERIVED), {"debug": True}).constants["debug"] is True


def test_integer_and_boolean_inputs_keep_their_dtype(write_problem):
    problem = load_problem(write_problem(DERIVED), {"batch_size": 3})
    assert [t.dtype for t in problem.inputs] == ["float32", "int64", "bool"]
    instance = instantiate(problem)
    x, labels, flags = instance.get_inputs()
    assert (x.dtype, labels.dtype, flags.dtype) == (torch.float32, torch.int64, torch.bool)
    assert labels.shape == (3,)


def test_unknown_override_names_the_constant(write_problem):
    path = write_problem(DERIVED)
    with pytest.raises(ProblemError) as err:
        load_problem(path, {"batch_sise": 4})
    message = str(err.value)
    assert path in message and "'batch_sise'" in message and "batch_size" in message
    assert "\n" not in message


def test_instantiate_applies_overrides_to_model_and_inputs(write_problem):
    problem = load_problem(write_problem(DERIVED), {"out_channels": 3, "batch_size": 1})
    instance = instantiate(problem)
    model = instance.Model(*instance.get_init_inputs())
    x, labels, flags = instance.get_inputs()
    assert model(x, labels, flags).shape == (1, 3, 12, 12)
    assert instance.namespace["bias_shape"] == (3, 1, 1)


def test_inputs_are_drawn_on_the_target_device_with_their_dtypes():
    # "meta" stands in for a GPU here: the same path draws inputs on the device itself
    instance = instantiate(load_problem("cross_entropy"), "meta")
    logits, targets = instance.get_inputs()
    assert (logits.device.type, targets.device.type) == ("meta", "meta")
    assert (logits.dtype, targets.dtype) == (torch.float32, torch.int64)
