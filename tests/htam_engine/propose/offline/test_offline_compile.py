"""Every Triton generator's kernels compile for the H200 (sm_90) with Triton's real compiler, no GPU needed.

The interpreter tests check what the kernels compute; this checks that the compiler accepts them
(loop-carried types, mixed integer widths, layouts) on the launch paths the knobs select: flat,
persistent and tiled elementwise grids with 32- and 64-bit offsets; multi-pass, online, cached
and split rows (row and elementwise outputs), middle-dim columns and their split; batch-statistics
rows; GEMMs with a fused epilogue, split-K and a triangular output, in float32 FMA and in
split-float32 tensor-core products; pooling; scans; argmax.
"""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob

from offline_support import CONV_EW_TAIL, compile_batch, write_problem

EW = "[torch.randn(8, 40), torch.randn(8, 1)]"
ROWS = "[torch.randn(4, 300)]"
CASES = {
    # name: (forward's parameters, its body, get_inputs, knobs)
    "ew-flat": ("x, y", "return torch.sigmoid(x * self.w) + y", EW, {}),
    "ew-persistent-int64": ("x, y", "return torch.sigmoid(x * self.w) + y", EW,
                            {Knob.EW_GRID: "persistent", Knob.INDEX: "int64", Knob.EW_BLOCK: 256}),
    "ew-tiles-fast": ("x, y", "return F.gelu(x * self.w) + y", EW,
                      {Knob.EW_GRID: "rows", Knob.MATH: "fast", Knob.EW_BLOCK: 512}),
    "ew-vec": ("x, y", "return torch.relu(x) * self.w - y", EW, {Knob.EW_VEC: 4}),
    "rows-cached": ("x", "return torch.softmax(x, dim=-1)", ROWS, {Knob.ROW_PASS: "cached"}),
    "rows-online": ("x", "return F.layer_norm(x, (300,))", ROWS, {Knob.ROW_PASS: "online", Knob.ROW_BLOCK: 64}),
    "rows-multi": ("x", "return x - torch.logsumexp(x, dim=1, keepdim=True)", ROWS,
                   {Knob.ROW_PASS: "multi", Knob.ROW_BLOCK: 64}),
    "rows-split-row-value": ("x, y", "return torch.mean((x - y) ** 2)", "[torch.randn(2, 4000), torch.randn(2, 4000)]",
                             {Knob.SPLIT: "wide", Knob.ROW_BLOCK: 256}),
    "rows-split-elementwise": ("x", "return F.layer_norm(x, (4000,))", "[torch.randn(2, 4000)]",
                               {Knob.SPLIT: "wide", Knob.ROW_BLOCK: 256, Knob.ROW_PASS: "online"}),
    "columns": ("x", "return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                "[torch.randn(2, 6, 5, 7)]", {}),
    "columns-split": ("x", "return torch.amax(x, dim=0) - x.sum(dim=0)", "[torch.randn(600, 20)]",
                      {Knob.SPLIT: "wide", Knob.COL_BLOCK: 16}),
    "columns-split-passes": ("x", "return (x - x.mean(dim=0, keepdim=True)) * torch.rsqrt(x.var(dim=0, "
                                  "unbiased=False, keepdim=True) + 1e-5)", "[torch.randn(600, 20)]",
                             {Knob.SPLIT: "wide", Knob.COL_BLOCK: 16}),
    "ew-channels-last": ("x", "", "[torch.randn(2, 3, 12, 11)]", {Knob.CONV_LAYOUT: "channels_last"}),
    "ew-channels-last-int64": ("x", "", "[torch.randn(2, 3, 12, 11)]",
                               {Knob.CONV_LAYOUT: "channels_last", Knob.INDEX: "int64"}),
    "batch-stats-split": ("x", "return F.batch_norm(x, None, None, training=True)", "[torch.randn(4, 3, 40, 30)]",
                          {Knob.SPLIT: "wide", Knob.ROW_BLOCK: 128, Knob.ROW_PASS: "online"}),
    "argmax": ("x", "return torch.argmax(x, dim=1)", ROWS, {Knob.ROW_PASS: "multi"}),
    "argmin-columns": ("x", "return torch.argmin(x, dim=1)", "[torch.randn(3, 40, 7)]", {}),
    "gemm-epilogue": ("a, b, y", "return torch.relu(a @ b + 1.0) * y",
                      "[torch.randn(40, 70), torch.randn(70, 50), torch.randn(40, 1)]",
                      {Knob.GEMM_KERNEL: "triton", Knob.GEMM_TILE: "64x64x32"}),
    # split-float32 tensor-core products on K-major copies (B transposed-copied): sm_90's tf32 mma path
    "gemm-tf32x3-k-major": ("a, b, y", "return torch.relu(a @ b + 1.0) * y",
                            "[torch.randn(40, 64), torch.randn(64, 48), torch.randn(40, 1)]",
                            {Knob.GEMM_KERNEL: "triton", Knob.GEMM_TILE: "64x64x32", Knob.GEMM_PRECISION: "tf32x3",
                             Knob.GEMM_OPERANDS: "k_major"}),
    "gemm-fma": ("a, b", "return a @ b", "[torch.randn(40, 64), torch.randn(64, 48)]",
                 {Knob.GEMM_TILE: "64x64x32", Knob.GEMM_PRECISION: "ieee", Knob.GEMM_OPERANDS: "contiguous"}),
    "gemm-split-k-int64": ("a, b", "return torch.bmm(a, b)", "[torch.randn(2, 20, 2000), torch.randn(2, 2000, 30)]",
                           {Knob.GEMM_SPLIT_K: 4, Knob.INDEX: "int64", Knob.GEMM_TILE: "32x32x32"}),
    "gemm-triu": ("a, b", "return torch.triu(a @ b)", "[torch.randn(70, 40), torch.randn(40, 70)]",
                  {Knob.GEMM_TILE: "32x32x32", Knob.GEMM_STAGES: 4, Knob.GEMM_WARPS: 2}),
    "pool-max": ("x", "return F.max_pool2d(torch.relu(x), 3, stride=2, padding=1)", "[torch.randn(2, 3, 12, 11)]", {}),
    "pool-avg-int64": ("x", "return F.avg_pool1d(x, 4, stride=2, padding=1, count_include_pad=False) + 1.0",
                       "[torch.randn(2, 3, 31)]", {Knob.INDEX: "int64"}),
    "scan-sum": ("x", "return torch.cumsum(x, dim=1)", "[torch.randn(3, 700)]", {Knob.SCAN_BLOCK: 256}),
    "scan-prod-reverse": ("x", "return torch.cumprod(x.flip(1), dim=1).flip(1)", "[torch.randn(3, 700)]", {}),
    "scan-columns": ("x", "return torch.cumsum(x, dim=1)", "[torch.randn(2, 30, 9)]", {}),
}
MODEL = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.w = nn.Parameter(torch.rand(8, 1, 1))
    def forward(self, x):
        return torch.relu(self.conv(x)) * self.w
"""
MODEL = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.rand(40))
    def forward(self, {args}):
        {body}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from htam_engine.propose.offline import generate

    d = tmp_path_factory.mktemp("offline_compile")
    cases, codes = [], {}
    for name, (args, body, inputs, knobs) in CASES.items():
        if name.startswith("ew-channels-last"):
            problem = write_problem(d, name.replace("-", "_"), CONV_EW_TAIL.format(conv="Conv2d", extra=1), inputs,
                                    "[3, 8, (8, 1, 1)]")
        else:
            problem = write_problem(d, name.replace("-", "_"), MODEL.format(args=args, body=body), inputs)
        codes[name] = generate(problem, "triton", None, knobs).code
        cases.append({"id": name, "problem": problem.path, "overrides": problem.overrides, "code": codes[name]})
    compiled = compile_batch(cases)
    compiled["_codes"] = codes
    return compiled


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_compile_for_sm90(compiled, case):
    assert case in compiled, sorted(compiled)
    assert compiled[case]["ok"], compiled[case]["message"]


def test_the_channels_last_cases_compile_the_strided_tail(compiled):
    for case in ("ew-channels-last", "ew-channels-last-int64"):
        assert "CH: tl.constexpr" in compiled["_codes"][case], case


def test_the_gemm_cases_compile_the_dot_precision_they_name(compiled):
    assert 'input_precision="tf32x3"' in compiled["_codes"]["gemm-tf32x3-k-major"]
    assert 'input_precision="ieee"' in compiled["_codes"]["gemm-fma"]


def test_split_paths_were_launched(compiled):
    # a split launches the partial and the combining kernel: both compiled
    for case in ("rows-split-row-value", "rows-split-elementwise", "columns-split", "columns-split-passes",
                 "batch-stats-split", "gemm-split-k-int64"):
        assert compiled[case]["kernels"] >= 2, (case, compiled[case])
