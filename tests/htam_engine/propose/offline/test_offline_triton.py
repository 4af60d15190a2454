"""Triton candidates are correct for every knob of the generators (TRITON_INTERPRET=1 on the CPU).

Breadth lives here because the interpreter needs no compiler: each fused activation,
reduction and normalization under each setting of the elementwise and row knobs (block,
warps, vector hints, flat / persistent / tiled grids, 32- and 64-bit offsets, multi-pass,
online and cached passes, split reductions), broadcast operands, middle-dimension
reductions, library-op epilogues, shapes the trace never saw, and half precision. All candidates
are generated here and checked in one fresh interpreter process (interp_runner.py).
"""

from __future__ import annotations

import pytest

from htam_engine.problems import load_problem
from htam_engine.propose.offline import Knob, generate

from offline_support import CONV_EW_TAIL, HAS_CUDA, RMS_CHANNELS, interpret_batch, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")

ACTIVATIONS = """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n))
        self.act = nn.Softplus(beta=2.0, threshold=5.0)
    def forward(self, x, y):
        a = torch.relu(x) + F.leaky_relu(x, 0.2) + F.gelu(x) + F.gelu(x, approximate="tanh")
        b = torch.sigmoid(x) + torch.tanh(x) + F.silu(x) + F.elu(x, 0.7) + torch.selu(x) + F.hardtanh(x, -0.5, 0.5)
        c = F.hardsigmoid(x) + F.hardswish(x) + self.act(x) + F.softsign(x) + F.mish(x) + F.relu6(x * 4)
        d = torch.abs(x) + torch.exp(x * 0.1) + torch.log(torch.abs(x) + 1) + torch.sqrt(torch.abs(x)) + x ** 2
        e = torch.clamp(x, min=-0.3) + torch.maximum(x, y) + torch.minimum(x, 0.25 * y) + x.pow(3) / 3
        f = (x - y) * self.w / (torch.abs(y) + 1.0) + torch.rsqrt(x * x + 1.0) + 2.0 ** x + torch.expm1(x)
        return a + b + c + d + e + f
"""
# Settings of the Triton generators' knobs (the defaults plus one or two changed knobs each).
EW_SETTINGS = {
    "defaults": {},
    "vec4": {Knob.EW_VEC: 4},
    "persistent": {Knob.EW_GRID: "persistent", Knob.EW_BLOCK: 256},
    "tiles": {Knob.EW_GRID: "rows", Knob.EW_BLOCK: 256},
    "fast": {Knob.MATH: "fast"},
    "int64": {Knob.INDEX: "int64"},
    "int64-persistent": {Knob.INDEX: "int64", Knob.EW_GRID: "persistent", Knob.EW_BLOCK: 256},
    "int64-tiles": {Knob.INDEX: "int64", Knob.EW_GRID: "rows", Knob.EW_BLOCK: 512, Knob.EW_WARPS: 2},
}
ROW_SETTINGS = {
    "multi": {Knob.ROW_PASS: "multi", Knob.ROW_BLOCK: 64},
    "online": {Knob.ROW_PASS: "online", Knob.ROW_BLOCK: 64, Knob.ROW_WARPS: 2},
    "cached": {Knob.ROW_PASS: "cached"},
    "fast": {Knob.MATH: "fast", Knob.ROW_BLOCK: 128},
}
MID_SETTINGS = {"defaults": {}, "narrow": {Knob.COL_BLOCK: 16}, "fast": {Knob.MATH: "fast"}}
ROWS = {
    "softmax": "return torch.softmax(x * 3.0, dim=-1)",
    "log_softmax": "return F.log_softmax(x, dim=1)",
    "logsumexp": "return torch.logsumexp(x, dim=1, keepdim=True)",
    "stats": "return x.sum(dim=1) + x.mean(dim=1) + x.amax(dim=1) - torch.min(x, dim=1)[0]",
    "var_std": "return x.var(dim=1, keepdim=True) + x.std(dim=-1, keepdim=True) * x",
    "rms_manual": "return x / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5)",
    "frobenius": "return x / torch.norm(x, p='fro')",
}
ONLINE = {"softmax", "log_softmax", "logsumexp", "var_std"}  # cases with an online (merged) pattern
# Too few rows / columns to fill the device: each is cut into slices reduced by separate programs.
SPLITS = {
    "loss": ("return torch.mean(torch.abs(x - y) ** 2)", "[torch.randn(3, 20000), torch.randn(3, 20000)]"),
    "columns": ("return torch.tanh(x.amax(dim=0) - x.sum(dim=0) / 300.0)", "[torch.randn(300, 50), torch.randn(1)]"),
    # batch statistics over a leading dim, two passes (mean, then variance): every pass split
    "columns_norm": ("return (x - x.mean(dim=0, keepdim=True)) * torch.rsqrt(x.var(dim=0, unbiased=False, keepdim=True) + 1e-5) * 2.0 + y",
                     "[torch.randn(300, 50) * 3.0 + 1.0, torch.randn(1)]"),
    "columns_var": ("return x.var(dim=0) + y", "[torch.randn(300, 50), torch.randn(1)]"),
}
# The launch a split case must reach: one pass combined by a second kernel, or every pass split.
SPLIT_LAUNCH = {"columns_norm": "_cols_spout[", "columns_var": "_cols_spout["}
CONV_TAIL = """
class Model(nn.Module):
    def __init__(self, cin, cout, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3)
        self.bias = nn.Parameter(torch.randn(bias_shape))
    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x) + self.bias
        return torch.softmax(x * 0.5, dim=1)
"""
# Two convolutions: the first feeds a softmax over the channels (a row region, which reads NCHW),
# the second an elementwise tail; channels-last converts only the second's input.
TWO_CONVS = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.conv2 = nn.Conv2d(8, 8, 3)
    def forward(self, x):
        y = torch.softmax(self.conv(x), dim=1)
        return torch.relu(self.conv2(y)) * 2.0
"""
CONV_LAYOUTS = {
    "channels_last": {Knob.CONV_LAYOUT: "channels_last"},
    "nchw": {Knob.CONV_LAYOUT: "nchw"},
    "channels_last-int64": {Knob.CONV_LAYOUT: "channels_last", Knob.INDEX: "int64", Knob.EW_BLOCK: 256},
}
# Which (convolution, extra operand) runs which settings: every convolution in both layouts, the
# band that cuts the rows channels-last only, 64-bit offsets and a batch the trace never saw on one.
CONV_CASES = {
    ("Conv2d", "1"): ("channels_last", "nchw", "channels_last-int64", "unseen"),
    ("Conv2d", "W"): ("channels_last",),
    ("Conv3d", "1"): ("channels_last", "nchw"),
    ("Conv3d", "W"): ("channels_last",),
    ("ConvTranspose2d", "1"): ("channels_last", "nchw"),
    ("ConvTranspose2d", "W"): ("channels_last",),
}
LAYER_NORM = """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = nn.LayerNorm(n, eps=1e-6)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)
    def forward(self, x):
        return self.ln(x + 3.0)
"""


def _case(cases: list[dict], cid: str, problem, knobs: dict | None = None, run_overrides=None, tol=1e-4,
          edit=lambda code: code) -> str:
    g = generate(problem, "triton", None, knobs)
    cases.append({"id": cid, "problem": problem.path, "overrides": run_overrides or problem.overrides,
                  "code": edit(g.code), "rtol": tol, "atol": tol})
    return g.code


def _without_unsplit_launches(code: str) -> str:
    """The one-program-per-row (column block) launches point at an undefined name: a candidate
    that still passes took the split path."""
    return code.replace("_k_region_0[(outer,)](", "_unsplit_launch[(outer,)](").replace(
        "_k_region_0_cols[(outer,", "_unsplit_launch[(outer,")


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """All candidates of this module, checked in one interpreter process: id -> {ok, message}."""
    d = tmp_path_factory.mktemp("offline_triton")
    cases: list[dict] = []
    codes: dict[str, str] = {}
    acts = write_problem(d, "acts", ACTIVATIONS, "[torch.randn(6, 37), torch.randn(6, 1)]", "[37]")
    for name, knobs in EW_SETTINGS.items():
        codes[f"acts-{name}"] = _case(cases, f"acts-{name}", acts, knobs)
    for name, body in ROWS.items():
        p = write_problem(d, name, f"class Model(nn.Module):\n    def forward(self, x):\n        {body}\n",
                          "[torch.randn(5, 67)]")
        for setting, knobs in ROW_SETTINGS.items():
            if setting != "online" or name in ONLINE:
                _case(cases, f"{name}-{setting}", p, knobs)
    for name, (body, inputs) in SPLITS.items():
        p = write_problem(d, name, f"class Model(nn.Module):\n    def forward(self, x, y):\n        {body}\n", inputs)
        for mode in ("auto", "wide"):
            codes[f"split-{name}-{mode}"] = _case(cases, f"split-{name}-{mode}", p,
                                                  {Knob.SPLIT: mode, Knob.ROW_BLOCK: 256, Knob.ROW_PASS: "multi"},
                                                  edit=_without_unsplit_launches)
    ln = write_problem(d, "ln", LAYER_NORM, "[torch.randn(4, 300)]", "[300]")
    for setting, knobs in ROW_SETTINGS.items():
        codes[f"ln-{setting}"] = _case(cases, f"ln-{setting}", ln, knobs)
    # two long rows: a layer norm cut into slices, statistics combined, each slice normalized
    few = write_problem(d, "ln_few", LAYER_NORM, "[torch.randn(2, 3000)]", "[3000]")
    codes["ln-split"] = _case(cases, "ln-split", few, {Knob.SPLIT: "wide", Knob.ROW_BLOCK: 128,
                                                        Knob.ROW_PASS: "online"}, edit=_without_unsplit_launches)
    rms = write_problem(d, "rms_channels", RMS_CHANNELS, "[torch.randn(2, 6, 5, 7)]", "[6]")
    for setting, knobs in MID_SETTINGS.items():
        _case(cases, f"rms_channels-{setting}", rms, knobs)
    conv = write_problem(d, "conv", CONV_TAIL, "[torch.randn(batch, 3, 9, 10)]", "[3, 8, (8, 1, 1)]",
                         consts="batch = 2")
    for setting, knobs in {"defaults": {}, "online": {Knob.ROW_PASS: "online"}}.items():
        codes[f"conv-{setting}"] = _case(cases, f"conv-{setting}", conv, knobs)
    for conv_kind, x_shape, bias_shape in (("Conv2d", "(batch, 3, 9, 10)", "(8, 1, 1)"),
                                           ("Conv3d", "(batch, 3, 5, 6, 7)", "(8, 1, 1, 1)"),
                                           ("ConvTranspose2d", "(batch, 3, 9, 10)", "(8, 1, 1)")):
        for extra in ("1", "W"):
            width = {"Conv2d": 8, "Conv3d": 5, "ConvTranspose2d": 12}[conv_kind]
            name = f"{conv_kind}-{extra}"
            tail = write_problem(d, f"conv_ew_{name}", CONV_EW_TAIL.format(conv=conv_kind, extra=width if extra == "W" else 1),
                                 f"[torch.randn{x_shape}]", f"[3, 8, {bias_shape}]", consts="batch = 2")
            for setting in CONV_CASES[(conv_kind, extra)]:
                if setting == "unseen":
                    knobs, overrides = CONV_LAYOUTS["channels_last"], {"batch": 3}
                else:
                    knobs, overrides = CONV_LAYOUTS[setting], None
                codes[f"conv-ew-{name}-{setting}"] = _case(cases, f"conv-ew-{name}-{setting}", tail, knobs,
                                                           run_overrides=overrides)
    two = write_problem(d, "two_convs", TWO_CONVS, "[torch.randn(2, 3, 12, 12)]")
    codes["two-convs"] = _case(cases, "two-convs", two, CONV_LAYOUTS["channels_last"])
    unseen = write_problem(d, "unseen", """
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.w = nn.Parameter(torch.randn(n))
            def forward(self, x):
                return torch.tanh(x * self.w) - 1 + torch.softmax(x, dim=1)
        """, "[torch.randn(batch, seq, 16)]", "[16]", consts="batch = 4\nseq = 5")
    _case(cases, "unseen", unseen, None, run_overrides={"batch": 7, "seq": 3})
    half = write_problem(d, "half", "class Model(nn.Module):\n    def forward(self, x):\n"
                         "        return torch.softmax(x, dim=-1) * 2.0\n", "[torch.randn(3, 40, dtype=torch.float16)]")
    _case(cases, "half", half, None, tol=2e-3)
    relu = load_problem("relu", {"batch_size": 3, "dim": 1000})
    _case(cases, "builtin-relu", relu, {Knob.EW_VEC: 4})
    results = interpret_batch(cases)
    results["_codes"] = codes
    return results


def _assert_ok(checked: dict, cid: str) -> None:
    assert cid in checked, sorted(checked)
    assert checked[cid]["ok"], checked[cid]["message"]


@pytest.mark.parametrize("setting", sorted(EW_SETTINGS))
def test_every_activation_every_elementwise_setting(checked, setting):
    _assert_ok(checked, f"acts-{setting}")


def test_elementwise_knobs_change_the_kernel(checked):
    codes = checked["_codes"]
    assert "tl.multiple_of" in codes["acts-vec4"] and "tl.multiple_of" not in codes["acts-defaults"]
    assert "for blk in range(first, nblocks, nprog)" in codes["acts-persistent"]
    assert "rmask[:, None]" in codes["acts-tiles"]
    fast_exp = "* 1.4426950408889634)"  # exp as exp2 of a scaled argument
    assert fast_exp in codes["acts-fast"] and fast_exp not in codes["acts-defaults"]
    # 64-bit offsets: no 32-bit branch at all
    assert "if BIG" not in codes["acts-int64"].split("def _k_region_0")[1].split("def ")[0]
    assert "tl.program_id(0).to(tl.int64)" in codes["acts-int64-tiles"]


@pytest.mark.parametrize("setting", sorted(ROW_SETTINGS))
@pytest.mark.parametrize("case", sorted(ROWS))
def test_row_reductions_every_row_setting(checked, case, setting):
    if setting == "online" and case not in ONLINE:
        pytest.skip("no online pattern in this case")
    _assert_ok(checked, f"{case}-{setting}")


@pytest.mark.parametrize("mode", ["auto", "wide"])
@pytest.mark.parametrize("case", sorted(SPLITS))
def test_few_long_reductions_are_split_across_programs(checked, case, mode):
    assert SPLIT_LAUNCH.get(case, "_part[") in checked["_codes"][f"split-{case}-{mode}"]
    _assert_ok(checked, f"split-{case}-{mode}")


@pytest.mark.parametrize("setting", sorted(ROW_SETTINGS))
def test_layer_norm_every_row_setting(checked, setting):
    _assert_ok(checked, f"ln-{setting}")


def test_layer_norm_passes_differ(checked):
    codes = checked["_codes"]

    def main_kernel(code: str) -> str:
        return code.split("def _k_region_0(")[1].split("@triton.jit")[0]

    assert "wm" in main_kernel(codes["ln-online"]) and "wm" not in main_kernel(codes["ln-multi"])  # Welford
    # the cached pass loads the row once (and keeps the online loop for rows too long to cache)
    assert "_cached[" in codes["ln-cached"] and "_cached[" not in codes["ln-online"]


def test_layer_norm_of_few_long_rows_is_split_and_normalized_per_slice(checked):
    code = checked["_codes"]["ln-split"]
    assert "_fin[(outer, SPLIT)]" in code and "pn" in code  # combined Welford triples, a program per slice
    _assert_ok(checked, "ln-split")


@pytest.mark.parametrize("setting", sorted(MID_SETTINGS))
def test_reduction_over_a_middle_dimension(checked, setting):
    _assert_ok(checked, f"rms_channels-{setting}")


@pytest.mark.parametrize("setting", ["defaults", "online"])
def test_library_op_epilogues(checked, setting):
    # the convolution without its bias (the tail adds it: one pass over its output fewer)
    assert "torch.conv2d(x, self.conv.weight, None," in checked["_codes"][f"conv-{setting}"]
    _assert_ok(checked, f"conv-{setting}")


@pytest.mark.parametrize(("conv", "extra", "setting"),
                         [(conv, extra, setting) for (conv, extra), settings in CONV_CASES.items() for setting in settings])
def test_a_convolutions_elementwise_tail_reads_it_channels_last_or_as_written(checked, conv, extra, setting):
    """channels_last: the convolution gets a channels-last input and the tail reads its output by
    strides (an operand along the last dim makes the tail read a contiguous copy instead)."""
    code = checked["_codes"][f"conv-ew-{conv}-{extra}-{setting}"]
    call = {"Conv2d": "torch.conv2d", "Conv3d": "torch.conv3d", "ConvTranspose2d": "torch.conv_transpose2d"}[conv]
    if setting == "nchw":
        assert f"{call}(x, self.conv.weight, None," in code and "CH: tl.constexpr" not in code
    else:
        assert f"{call}(_channels_last(x), self.conv.weight, None," in code and "CH: tl.constexpr" in code
    assert "self.conv.bias.view((1, -1" in code  # the bias is one more operand of the tail
    _assert_ok(checked, f"conv-ew-{conv}-{extra}-{setting}")


def test_only_a_convolution_whose_tail_reads_it_in_place_gets_a_channels_last_input(checked):
    code = checked["_codes"]["two-convs"]
    assert "= torch.conv2d(x, self.conv.weight, None," in code
    assert "torch.conv2d(_channels_last(t_softmax), self.conv2.weight, None," in code
    _assert_ok(checked, "two-convs")


def test_shapes_the_trace_never_saw(checked):
    """Sizes are read at run time: traced at (4, 5, 16), run at (7, 3, 16)."""
    _assert_ok(checked, "unseen")


def test_half_precision_computed_in_float32_returned_as_half(checked):
    _assert_ok(checked, "half")


def test_builtin_problem(checked):
    _assert_ok(checked, "builtin-relu")
