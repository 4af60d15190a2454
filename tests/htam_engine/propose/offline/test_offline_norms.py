"""Batch, instance and group norms (Triton, under the interpreter) for every row knob that applies.

Batch statistics reduce every dim but the channels (the middle-kept layout, split across programs
when channels are few), a 2-D batch norm reduces its leading dim (the column layout); eval mode
uses the running statistics; group norm runs on the grouped view (N, G, C/G, *S) with its affine
parameters read along the group and channel-in-group dims.
"""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob, generate, plan_problem, plan_space

from offline_support import HAS_CUDA, InterpreterBatch, assert_ok, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")


def _model(init: str, forward: str) -> str:
    return (f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {init}\n"
            f"        with torch.no_grad():\n            for p in self.parameters():\n"
            f"                p.uniform_(0.5, 1.5)\n    def forward(self, x):\n        {forward}\n")


NORMS = {
    "bn2d": (_model("self.n = nn.BatchNorm2d(3)", "return torch.relu(self.n(x * 2.0))"), "[torch.randn(4, 3, 9, 7)]"),
    "bn1d": (_model("self.n = nn.BatchNorm1d(24)", "return self.n(x)"), "[torch.randn(16, 24)]"),
    "bn3d": (_model("self.n = nn.BatchNorm3d(2)", "return self.n(x) - 1.0"), "[torch.randn(3, 2, 4, 5, 6)]"),
    "bn_eval": (_model("self.n = nn.BatchNorm2d(3)\n        self.n.eval()", "return self.n(x)"),
                "[torch.randn(4, 3, 9, 7)]"),
    "instance": (_model("self.n = nn.InstanceNorm2d(3, affine=True)", "return self.n(x)"),
                 "[torch.randn(4, 3, 9, 7)]"),
    "group": (_model("self.n = nn.GroupNorm(2, 6)", "return torch.tanh(self.n(x))"), "[torch.randn(3, 6, 5, 7)]"),
    "group3d": (_model("self.n = nn.GroupNorm(3, 6)", "return self.n(x)"), "[torch.randn(2, 6, 3, 4, 5)]"),
}
NORM_SETTINGS = {
    "defaults": {},
    "multi": {Knob.ROW_PASS: "multi", Knob.ROW_BLOCK: 64},
    "online-split": {Knob.ROW_PASS: "online", Knob.ROW_BLOCK: 64, Knob.SPLIT: "wide"},
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    d = tmp_path_factory.mktemp("offline_norms")
    batch = InterpreterBatch()
    for name, (body, inputs) in NORMS.items():
        p = write_problem(d, name, body, inputs)
        space = plan_space(plan_problem(p, "triton"), "triton")
        for setting, knobs in NORM_SETTINGS.items():
            if all(k in space for k in knobs):  # (in eval mode a batch norm is elementwise: no row knobs)
                batch.add(f"{name}-{setting}", p, knobs)
    return batch.run()


@pytest.mark.parametrize("setting", sorted(NORM_SETTINGS))
@pytest.mark.parametrize("case", sorted(NORMS))
def test_norms(checked, case, setting):
    if case == "bn_eval" and setting != "defaults":
        pytest.skip("running statistics: an elementwise region has no row knobs")
    assert_ok(checked, f"{case}-{setting}")


def test_eval_mode_batch_norm_is_elementwise_with_the_running_statistics(tmp_path):
    region = plan_problem(write_problem(tmp_path, "bn_eval", *NORMS["bn_eval"])).regions[0]
    assert region.kind == "ew" and any("running_var" in i.source for i in region.inputs)


def test_batch_statistics_use_the_middle_layout_and_split(checked, tmp_path):
    p = write_problem(tmp_path, "bn2d", *NORMS["bn2d"])
    region = plan_problem(p).regions[0]
    assert region.middle and region.reduce_dims == (0, 2, 3)
    code = checked["_codes"]["bn2d-online-split"]
    assert "((r // IN) * NK + o) * IN + r % IN" in code and "_part[" in code
    assert "self.n(" not in code.split("class ModelNew")[1]  # the norm runs in our kernel


def test_group_norm_runs_on_the_grouped_view(checked):
    code = checked["_codes"]["group-defaults"].split("class ModelNew")[1]
    assert "x.unflatten(1, (2, -1))" in code and ".flatten(1, 2)" in code
    assert "(o % mk" in checked["_codes"]["group-defaults"]  # the affine along (group, channel-in-group)


def test_backends_without_these_layouts_keep_the_norms(tmp_path):
    for name in ("bn2d", "group"):
        p = write_problem(tmp_path, name, *NORMS[name])
        plan = plan_problem(p, "cuda")
        assert not any(r.middle for r in plan.regions) and plan.kept
        assert "self.n(" in generate(p, "cuda").code.split("class ModelNew")[1]
