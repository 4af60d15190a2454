"""Cumulative scans (Triton, under the interpreter): sums and products along the last or a middle dim,
reversed (flip, cumsum, flip) and exclusive (zeros concatenated before a narrowed cumsum), with ops
fused before and after the scan, for the scan knobs (chunk, warps, inner block)."""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob, generate, plan_problem

from offline_support import HAS_CUDA, InterpreterBatch, assert_ok, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")

SCANS = {
    "cumsum": ("return torch.cumsum(x * 2.0, dim=1) - 1.0", "[torch.randn(3, 700)]"),
    "cumprod": ("return torch.cumprod(1.0 + 0.01 * x, dim=-1)", "[torch.randn(3, 700)]"),
    "reverse": ("return torch.cumsum(x.flip(1), dim=1).flip(1)", "[torch.randn(3, 700)]"),
    "exclusive": ("return torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), "
                  "torch.cumsum(x.narrow(dim=1, start=0, length=x.size(1) - 1), dim=1)), dim=1)",
                  "[torch.randn(3, 700)]"),
    "masked": ("return torch.cumsum(x * m, dim=1)", "[torch.randn(3, 700), torch.randn(3, 700) > 0]"),
    "middle": ("return torch.tanh(torch.cumsum(x, dim=1))", "[torch.randn(2, 30, 9)]"),
    "middle_reverse": ("return torch.cumsum(x.flip(1), dim=1).flip(1)", "[torch.randn(2, 30, 9)]"),
}
SCAN_SETTINGS = {"defaults": {}, "chunks": {Knob.SCAN_BLOCK: 256, Knob.SCAN_WARPS: 2, Knob.COL_BLOCK: 16}}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    d = tmp_path_factory.mktemp("offline_scan")
    batch = InterpreterBatch()
    for name, (body, inputs) in SCANS.items():
        args = "x, m" if "* m" in body else "x"
        p = write_problem(d, name, f"class Model(nn.Module):\n    def forward(self, {args}):\n        {body}\n", inputs)
        for setting, knobs in SCAN_SETTINGS.items():
            batch.add(f"{name}-{setting}", p, knobs)
    return batch.run()


@pytest.mark.parametrize("setting", sorted(SCAN_SETTINGS))
@pytest.mark.parametrize("case", sorted(SCANS))
def test_scans(checked, case, setting):
    assert_ok(checked, f"{case}-{setting}")


def test_scan_patterns_are_one_kernel(checked):
    codes = checked["_codes"]
    assert "reverse=True" in codes["reverse-defaults"] and ".flip(" not in codes["reverse-defaults"].split(
        "class ModelNew")[1]
    exclusive = codes["exclusive-defaults"].split("class ModelNew")[1]
    assert "torch.cat" not in exclusive and "narrow" not in exclusive
    assert "scanned = scanned - a" in codes["exclusive-defaults"]
    assert "BLOCK=256" in codes["cumsum-chunks"] and "num_warps=2" in codes["cumsum-chunks"]


def test_a_scan_is_triton_only(tmp_path):
    p = write_problem(tmp_path, "cs", "class Model(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.cumsum(x, dim=1)\n", "[torch.randn(3, 7)]")
    assert plan_problem(p).regions[0].kind == "scan"
    with pytest.raises(Exception, match="no scan generator"):
        generate(p, "cpp")
