"""Index reductions and losses (Triton, under the interpreter) for every row knob that applies.

argmax / argmin over the last, a middle and every dim (first index on ties, int64 output);
pointwise losses with their reductions (mean, sum, batchmean); cross-entropy and triplet-margin
losses as a per-row region followed by a mean over the rows.
"""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob, Unsupported, generate, plan_problem

from offline_support import HAS_CUDA, InterpreterBatch, assert_ok, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")

INDEX = {
    "argmax_last": ("return torch.argmax(x * 2.0 - 1.0, dim=-1)", "[torch.randn(5, 300)]"),
    "argmin_mid": ("return torch.argmin(x, dim=1)", "[torch.randn(3, 40, 7)]"),
    "argmax_keep": ("return x.argmax(dim=1, keepdim=True)", "[torch.randn(6, 33)]"),
    "argmax_all": ("return torch.argmax(x)", "[torch.randn(6, 33)]"),
    "argmax_ties": ("return torch.argmax(torch.clamp(x, max=0.5), dim=1)", "[torch.randn(4, 90) + 1.0]"),
}
INDEX_SETTINGS = {"defaults": {}, "looped": {Knob.ROW_PASS: "multi", Knob.ROW_BLOCK: 64},
                  "narrow": {Knob.COL_BLOCK: 16}}
LOSSES = {
    "huber": ("return F.smooth_l1_loss(x, y, beta=0.5)", "[torch.randn(6, 150), torch.randn(6, 150)]"),
    "huber_delta": ("return F.huber_loss(x, y, delta=0.3, reduction='sum')", "[torch.randn(6, 150), torch.randn(6, 150)]"),
    "kl_batchmean": ("return F.kl_div(torch.log(x), y, reduction='batchmean')",
                     "[torch.rand(6, 150).softmax(-1), torch.rand(6, 150).softmax(-1)]"),
    "l1": ("return F.l1_loss(x, y)", "[torch.randn(6, 150), torch.randn(6, 150)]"),
    "cross_entropy": ("return F.cross_entropy(x, y)", "[torch.randn(7, 130), torch.randint(0, 130, (7,))]"),
    "triplet": ("return self.loss(x, y, y * 0.5 - x)",
                "[torch.randn(7, 130), torch.randn(7, 130)]"),
}
LOSS_SETTINGS = {"defaults": {}, "looped": {Knob.ROW_PASS: "multi", Knob.ROW_BLOCK: 64}}


def _forward(body: str, args: str) -> str:
    init = ("    def __init__(self):\n        super().__init__()\n        self.loss = nn.TripletMarginLoss(margin=0.7)\n"
            if "self.loss" in body else "")
    return f"class Model(nn.Module):\n{init}    def forward(self, {args}):\n        {body}\n"


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    d = tmp_path_factory.mktemp("offline_reductions")
    batch = InterpreterBatch()
    for name, (body, inputs) in INDEX.items():
        p = write_problem(d, name, _forward(body, "x"), inputs)
        for setting, knobs in INDEX_SETTINGS.items():
            batch.add(f"{name}-{setting}", p, knobs)
    for name, (body, inputs) in LOSSES.items():
        p = write_problem(d, name, _forward(body, "x, y"), inputs)
        for setting, knobs in LOSS_SETTINGS.items():
            batch.add(f"{name}-{setting}", p, knobs, tol=1e-4)
    return batch.run()


@pytest.mark.parametrize("setting", sorted(INDEX_SETTINGS))
@pytest.mark.parametrize("case", sorted(INDEX))
def test_index_reductions(checked, case, setting):
    assert_ok(checked, f"{case}-{setting}")


@pytest.mark.parametrize("setting", sorted(LOSS_SETTINGS))
@pytest.mark.parametrize("case", sorted(LOSSES))
def test_losses(checked, case, setting):
    assert_ok(checked, f"{case}-{setting}")


def test_row_losses_are_a_per_row_region_then_a_mean(tmp_path):
    p = write_problem(tmp_path, "ce", _forward("return F.cross_entropy(x, y)", "x, y"),
                      "[torch.randn(7, 30), torch.randint(0, 30, (7,))]")
    plan = plan_problem(p)
    assert [r.kind for r in plan.regions] == ["row", "row"] and plan.regions[0].out_shape == (7, 1)
    assert "y.view(-1, 1)" in plan.lines[0]  # class indices beside each row
    with pytest.raises(Unsupported, match="use triton"):
        generate(p, "cuda")


def test_argmax_output_is_int64_and_never_split(tmp_path):
    p = write_problem(tmp_path, "am", _forward("return torch.argmax(x)", "x"), "[torch.randn(3, 99000)]")
    code = generate(p, "triton").code
    assert "dtype=torch.int64" in code and "_part[" not in code
