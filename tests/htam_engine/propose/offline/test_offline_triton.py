"""Triton candidates are correct for every template (run under TRITON_INTERPRET=1 on the CPU).

Breadth lives here because the interpreter needs no compiler: each fused activation,
reduction and normalization, broadcast operands, middle-dimension reductions,
library-op epilogues, shapes the trace never saw, and half precision.
"""

from __future__ import annotations

import pytest
import torch

from htam_engine.propose.offline import generate

from offline_support import run_candidate, write_problem

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


@pytest.fixture
def activations(tmp_path):
    return write_problem(tmp_path, "acts", ACTIVATIONS, "[torch.randn(6, 37), torch.randn(6, 1)]", "[37]")


@pytest.mark.parametrize("template", ["ew_fused_scalar", "ew_fused_vec4", "ew_grid_stride", "ew_fast_math"])
def test_every_activation_every_elementwise_template(interpret, activations, template):
    g = generate(activations, "triton", template)
    assert g.template == template
    ref, new = run_candidate(activations, g.code)
    torch.testing.assert_close(new, ref, rtol=1e-4, atol=1e-4)


ROWS = {
    "softmax": "return torch.softmax(x * 3.0, dim=-1)",
    "log_softmax": "return F.log_softmax(x, dim=1)",
    "logsumexp": "return torch.logsumexp(x, dim=1, keepdim=True)",
    "stats": "return x.sum(dim=1) + x.mean(dim=1) + x.amax(dim=1) - torch.min(x, dim=1)[0]",
    "var_std": "return x.var(dim=1, keepdim=True) + x.std(dim=-1, keepdim=True) * x",
    "rms_manual": "return x / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5)",
}


@pytest.mark.parametrize("template", ["row_reduce_block", "row_reduce_warp", "row_reduce_online", "row_reduce_vec4"])
@pytest.mark.parametrize("case", sorted(ROWS))
def test_row_reductions_every_row_template(interpret, tmp_path, case, template):
    p = write_problem(tmp_path, case, f"""
        class Model(nn.Module):
            def forward(self, x):
                {ROWS[case]}
        """, "[torch.randn(5, 67)]")
    if template == "row_reduce_online" and case not in ("softmax", "log_softmax", "logsumexp", "var_std"):
        pytest.skip("no online pattern in this case")
    g = generate(p, "triton", template)
    ref, new = run_candidate(p, g.code)
    torch.testing.assert_close(new, ref, rtol=1e-4, atol=1e-4)


def test_layer_norm_and_welford_online(interpret, tmp_path):
    p = write_problem(tmp_path, "ln", """
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.ln = nn.LayerNorm(n, eps=1e-6)
                with torch.no_grad():
                    self.ln.weight.uniform_(0.5, 1.5)
                    self.ln.bias.uniform_(-0.5, 0.5)
            def forward(self, x):
                return self.ln(x + 3.0)
        """, "[torch.randn(4, 300)]", "[300]")
    online = generate(p, "triton", "row_reduce_online")
    block = generate(p, "triton", "row_reduce_block")
    assert "wm" in online.code and "wm" not in block.code  # Welford accumulators only in the online kernel
    for g in (online, block):
        ref, new = run_candidate(p, g.code)
        torch.testing.assert_close(new, ref, rtol=1e-4, atol=1e-4)


def test_reduction_over_a_middle_dimension(interpret, tmp_path):
    p = write_problem(tmp_path, "mid", """
        class Model(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.g = nn.Parameter(torch.rand(c, 1, 1) + 0.5)
            def forward(self, x):
                return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5) * self.g
        """, "[torch.randn(2, 6, 5, 7)]", "[6]")
    ref, new = run_candidate(p, generate(p, "triton").code)
    torch.testing.assert_close(new, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("template", ["epilogue_fused", "epilogue_vec4"])
def test_library_op_epilogues(interpret, tmp_path, template):
    p = write_problem(tmp_path, "conv", """
        class Model(nn.Module):
            def __init__(self, cin, cout, bias_shape):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout, 3)
                self.bias = nn.Parameter(torch.randn(bias_shape))
            def forward(self, x):
                x = self.conv(x)
                x = torch.relu(x) + self.bias
                return torch.softmax(x * 0.5, dim=1)
        """, "[torch.randn(batch, 3, 9, 10)]", "[3, 8, (8, 1, 1)]", consts="batch = 2")
    g = generate(p, "triton", template)
    assert "self.conv(x)" in g.code
    ref, new = run_candidate(p, g.code)
    torch.testing.assert_close(new, ref, rtol=1e-4, atol=1e-4)


def test_shapes_the_trace_never_saw(interpret, tmp_path):
    """The kernels read sizes at run time: a model traced at one size runs correctly at another."""
    p = write_problem(tmp_path, "affine", """
        class Model(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.w = nn.Parameter(torch.randn(n))
            def forward(self, x):
                return torch.tanh(x * self.w) - 1
        """, "[torch.randn(batch, 16)]", "[16]", consts="batch = 4")
    g = generate(p, "triton", "ew_fused_vec4")
    ns: dict = {}
    exec(compile(g.code, "candidate", "exec"), ns)
    torch.manual_seed(0)
    model = ns["ModelNew"](16)
    x = torch.randn(7, 3, 16)  # other leading dims than traced
    torch.testing.assert_close(model(x), torch.tanh(x * model.w) - 1)


def test_half_precision_is_computed_in_float32_and_returned_as_half(interpret, tmp_path):
    p = write_problem(tmp_path, "half", """
        class Model(nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=-1)
        """, "[torch.randn(3, 40, dtype=torch.float16)]")
    ref, new = run_candidate(p, generate(p, "triton").code)
    assert new.dtype == torch.float16
    torch.testing.assert_close(new.float(), ref.float(), rtol=1e-3, atol=1e-3)
