"""Pooling regions (Triton) are correct for every pooling knob, with ops fused before and after.

Max pooling with padding, dilation and ceil_mode; average pooling with and without the padded
positions in the divisor and with a divisor override; 1-, 2- and 3-D windows; the elementwise ops
before the pool applied at each window position and those after it at the pooled position;
adaptive pooling to size 1 as a reduction; 64-bit offsets.
"""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob, generate, plan_problem

from offline_support import HAS_CUDA, InterpreterBatch, assert_ok, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")

POOLS = {
    "max1d": ("F.max_pool1d(x, 4, stride=2, padding=2, dilation=2)", "[torch.randn(2, 3, 31)]"),
    "max2d_ceil": ("F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)", "[torch.randn(2, 3, 12, 11)]"),
    "avg2d_valid": ("F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)",
                    "[torch.randn(2, 3, 12, 11)]"),
    "avg2d_ceil": ("F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)", "[torch.randn(2, 3, 12, 11)]"),
    "avg3d_divisor": ("F.avg_pool3d(x, 2, stride=2, divisor_override=3)", "[torch.randn(2, 2, 6, 5, 7)]"),
    "max3d": ("F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1))", "[torch.randn(2, 2, 7, 8, 6)]"),
}
POOL_SETTINGS = {"defaults": {}, "small": {Knob.POOL_BLOCK: 128, Knob.POOL_WARPS: 1}, "int64": {Knob.INDEX: "int64"}}
FUSED = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.pool = nn.MaxPool2d(2)
        self.bias = nn.Parameter(torch.randn(4, 1, 1))
    def forward(self, x):
        x = torch.relu(self.conv(x) - 0.1)
        x = self.pool(x)
        return torch.tanh(x + self.bias) * 2.0
"""
ADAPTIVE = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gap = nn.AdaptiveAvgPool2d(1)
    def forward(self, x):
        return torch.sigmoid(self.gap(x * 3.0))
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    d = tmp_path_factory.mktemp("offline_window")
    batch = InterpreterBatch()
    for name, (call, inputs) in POOLS.items():
        p = write_problem(d, name, f"class Model(nn.Module):\n    def forward(self, x):\n        return {call}\n",
                          inputs)
        for setting, knobs in POOL_SETTINGS.items():
            batch.add(f"{name}-{setting}", p, knobs)
    batch.add("fused", write_problem(d, "fused", FUSED, "[torch.randn(2, 3, 11, 12)]"))
    batch.add("adaptive", write_problem(d, "adaptive", ADAPTIVE, "[torch.randn(2, 5, 6, 7)]"))
    return batch.run()


@pytest.mark.parametrize("setting", sorted(POOL_SETTINGS))
@pytest.mark.parametrize("case", sorted(POOLS))
def test_pooling_every_setting(checked, case, setting):
    assert_ok(checked, f"{case}-{setting}")


def test_pooling_knobs_change_the_kernel(checked):
    codes = checked["_codes"]
    assert "BLOCK = 128" in codes["max1d-small"] and "num_warps=1" in codes["max1d-small"]
    kernel = codes["max1d-int64"].split("def _k_region_0(")[1]
    assert "tl.program_id(0).to(tl.int64)" in kernel and "if BIG" not in kernel


def test_ops_before_and_after_the_pool_run_in_its_kernel(checked):
    code = checked["_codes"]["fused"]
    kernel = code.split("def _k_region_0(")[1].split("def _region_0")[0]
    assert "tl.static_range(2)" in kernel and "tl.maximum(acc" in kernel  # the window, unrolled
    # the convolution's bias, relu, pool, bias, tanh: one kernel
    assert "torch.conv2d(x, self.conv.weight, None," in code and "_region_1" not in code
    assert_ok(checked, "fused")


def test_adaptive_pooling_to_one_is_a_reduction(tmp_path):
    p = write_problem(tmp_path, "adaptive", ADAPTIVE, "[torch.randn(2, 5, 6, 7)]")
    region = plan_problem(p).regions[0]
    assert region.kind == "row" and region.reduce_dims == (2, 3)


def test_adaptive_pooling_result(checked):
    assert_ok(checked, "adaptive")


def test_backends_without_a_pooling_generator_keep_the_pool(tmp_path):
    p = write_problem(tmp_path, "fused", FUSED, "[torch.randn(2, 3, 11, 12)]")
    assert [r.kind for r in plan_problem(p, "triton").regions] == ["window"]
    cuda_plan = plan_problem(p, "cuda")
    assert [r.kind for r in cuda_plan.regions] == ["ew", "ew"] and "MaxPool2d" in cuda_plan.kept
    assert "self.pool(" in generate(p, "cuda").code.split("class ModelNew")[1]
