"""compare_outputs: tolerances by dtype, the whole-output bound, NaN/Inf, shapes, dtypes,
nested outputs, and a Mismatch that says where and how far."""

from __future__ import annotations

import math

import pytest
import torch

from htam_engine.evaluate.checks.compare import compare_outputs
from htam_engine.evaluate.config import DEFAULT_TOLERANCES

# The whole-output bound's cases are written for a float32 tolerance of 1e-2 (a looser one a
# person can choose), where all-zeros softmax over a 4096-wide row slips under atol; the
# default is KernelBench's 1e-4 (test_the_default_float32_tolerance_is_kernelbenchs).
TOL = dict(DEFAULT_TOLERANCES, float32=1e-2)


def cmp(new, ref, noise=None):
    return compare_outputs(new, ref, TOL, "get_inputs#0", noise)


def test_equal_within_tolerance_passes_and_reports_nothing():
    ref = torch.randn(64, 32)
    assert cmp(ref + 1e-4, ref) is None


def test_mismatch_names_the_worst_element_shapes_dtypes_and_input_set():
    ref = torch.zeros(4, 5)
    new = ref.clone()
    new[2, 3] = 0.5
    new[1, 1] = 0.05
    m = cmp(new, ref)
    assert m.where == [2, 3] and m.max_abs_error == pytest.approx(0.5)
    assert m.expected_shape == m.actual_shape == [4, 5]
    assert m.expected_dtype == m.actual_dtype == "float32"
    assert m.input_set == "get_inputs#0" and "2 of 20 elements" in m.note


def test_integers_past_2_53_that_differ_by_one_show_their_difference():
    # an int64 result computed in float64 (cheat_int_via_float64): the two are equal as float64
    ref = torch.tensor([3 * 2**60 + 4, 7])
    new = torch.tensor([3 * 2**60, 7])
    m = cmp(new, ref)
    assert m.where == [0] and m.max_abs_error == 4.0 and "1 of 2 elements differ" in m.note


def test_all_zeros_softmax_passes_elementwise_but_not_the_whole_output_bound():
    ref = torch.softmax(torch.rand(2, 4096), dim=1)
    assert float(ref.max()) < 1e-2  # every element under atol
    m = cmp(torch.zeros_like(ref), ref)
    assert m is not None and "whole-output relative error 1" in m.note


def test_constant_output_fails_where_the_true_output_is_not_near_zero():
    ref = torch.softmax(torch.rand(4, 2048), dim=1)
    m = cmp(torch.full_like(ref, 1 / 2048), ref)
    assert m is not None and "whole-output" in m.note


def test_output_near_zero_within_its_own_float_noise_passes():
    # Reference dominated by rounding (x - x.mean() of a constant): the candidate may differ
    # from it by about as much as the reference differs from float64.
    ref = torch.full((1000,), 1e-7) * torch.randn(1000).sign()
    new = ref * -1
    noise_norm = float(torch.linalg.vector_norm(ref))  # the reference is pure noise
    assert cmp(new, ref, noise=lambda path: noise_norm) is None
    assert cmp(new, ref, noise=lambda path: 0.0) is not None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_never_pass_where_the_reference_is_finite(bad):
    ref = torch.ones(8)
    new = ref.clone()
    new[3] = bad
    m = cmp(new, ref)
    assert m is not None and "NaN/Inf" in m.note and m.where == [3]
    assert math.isfinite(m.max_abs_error)  # the record stays valid JSON


def test_nan_and_inf_in_the_same_places_as_the_reference_pass():
    ref = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert cmp(ref.clone(), ref) is None
    flipped = ref.clone()
    flipped[2] = -math.inf
    assert cmp(flipped, ref) is not None


def test_shape_and_dtype_must_match():
    ref = torch.ones(4, 4)
    m = cmp(torch.ones(16), ref)
    assert "shape [16] instead of [4, 4]" in m.note and m.actual_shape == [16]
    m = cmp(torch.ones(4, 4, dtype=torch.float64), ref)
    assert "dtype float64 instead of float32" in m.note


def test_tolerance_follows_the_output_dtype():
    ref = torch.ones(10, dtype=torch.float64)
    assert cmp(ref + 1e-3, ref) is not None  # float64: 1e-5
    assert cmp(ref.float() + 1e-3, ref.float()) is None  # float32: 1e-2
    half = torch.ones(10, dtype=torch.float16)
    assert cmp(half + 0.005, half) is None


def test_the_default_float32_tolerance_is_kernelbenchs():
    ref = torch.ones(10)
    assert compare_outputs(ref + 5e-5, ref, DEFAULT_TOLERANCES, "s") is None
    m = compare_outputs(ref + 1e-3, ref, DEFAULT_TOLERANCES, "s")  # within 1e-2, not within 1e-4
    assert m is not None and "atol=rtol=0.0001" in m.note


def test_integer_and_bool_outputs_compare_exactly():
    ref = torch.arange(10)
    new = ref.clone()
    new[7] = 8
    m = cmp(new, ref)
    assert m is not None and "1 of 10 elements differ" in m.note and m.where == [7]
    assert cmp(torch.tensor([True, False]), torch.tensor([True, True])) is not None


def test_tuple_outputs_compare_each_element_and_their_structure():
    a, b = torch.randn(3), torch.randn(2, 2)
    assert cmp((a, b), (a, b)) is None
    m = cmp((a, b + 1), (a, b))
    assert m is not None and m.note.startswith("output[1]:")
    m = cmp((a,), (a, b))
    assert "output structure differs" in m.note
    m = cmp(a, (a, b))
    assert "structure" in m.note


def test_a_number_where_a_tensor_is_expected_is_a_mismatch():
    m = cmp(1.0, torch.tensor(1.0))
    assert m is not None and "expected a Tensor" in m.note


class _ConvGroupNormMean(torch.nn.Module):
    """KernelBench's level2/23_Conv3d_GroupNorm_Mean: the mean of group-normalised values is 0
    but for rounding, so the float32 reference is ~1e-8 of noise around a float64 ~1e-17."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 24, 3)
        self.group_norm = torch.nn.GroupNorm(8, 24)

    def forward(self, x):
        return self.group_norm(self.conv(x)).mean(dim=[1, 2, 3, 4])


def _with_yardstick(model, x):
    """Reference output and the noise callback a judge gives: its distance to a float64 run."""
    import copy

    from htam_engine.evaluate.checks.compare import noise_norm

    with torch.no_grad():
        ref = model(x)
        exact = copy.deepcopy(model).double()(x.double())
    return ref, (lambda path: noise_norm(ref, exact))


def test_near_zero_reference_lets_the_per_element_tolerances_govern():
    torch.manual_seed(0)
    model, x = _ConvGroupNormMean(), torch.rand(16, 3, 8, 10, 10)
    ref, noise = _with_yardstick(model, x)
    assert float(ref.abs().max()) < 1e-7 and noise("") > 0.5 * float(torch.linalg.vector_norm(ref))
    with torch.no_grad():  # an honest kernel: group norm by hand, the mean as sum / n
        y = model.conv(x).reshape(16, 8, -1)
        mu = y.mean(-1, keepdim=True)
        z = (y - mu) / torch.sqrt(((y - mu) ** 2).mean(-1, keepdim=True) + 1e-5)
        honest = z.reshape(16, -1).sum(1) / z[0].numel()
    assert cmp(honest, ref, noise) is None
    # Reduced in another order at full size, an honest kernel's error is ~1e-6: 10^4 times
    # under atol, yet 100 times the reference's own noise; the relative bound has no meaning here.
    noisier = ref + 1e-6 * torch.randn(ref.shape, generator=torch.Generator().manual_seed(1))
    assert cmp(noisier, ref, noise) is None
    assert cmp(torch.zeros_like(ref), ref, noise) is None  # ~0 is the true output
    # Without the float64 yardstick nothing says the reference is noise: the bound stays.
    assert "whole-output" in cmp(noisier, ref).note
    # and the per-element tolerances still hold
    assert "outside atol" in cmp(ref + 0.05, ref, noise).note


@pytest.mark.parametrize("make", [
    pytest.param(lambda x: torch.softmax(x, dim=1), id="softmax over a long row"),
    pytest.param(lambda x: torch.nn.functional.normalize(x, dim=1), id="L2 norm over a long row"),
])
def test_all_zeros_fail_with_the_yardstick_where_the_true_output_is_not_near_zero(make):
    from htam_engine.evaluate.checks.compare import noise_norm

    x = torch.randn(2, 1 << 18, generator=torch.Generator().manual_seed(2))
    ref, exact = make(x), make(x.double())
    assert float(ref.abs().max()) < 1e-2  # all-zeros passes every element's tolerance
    m = cmp(torch.zeros_like(ref), ref, lambda path: noise_norm(ref, exact))
    assert m is not None and "whole-output relative error 1" in m.note


def _signed_matvec(rows=256, k=1 << 18, seed=0):
    """A signed sum of many products, three ways: the reference's float32, an honest float32
    kernel that sums in another order, float64 (the yardstick)."""
    g = torch.Generator().manual_seed(seed)
    a, x = torch.randn(rows, k, generator=g), torch.randn(k, 1, generator=g)
    ref = a @ x
    honest = (a * x.T).view(rows, 64, -1).sum(-1).sum(-1, keepdim=True)  # 64 partial sums, then theirs
    exact = a.double() @ x.double()
    return ref, honest, exact


def test_an_honest_kernel_as_close_to_float64_as_the_reference_passes_on_htams_own_sets():
    ref, honest, exact = _signed_matvec()
    tol = dict(DEFAULT_TOLERANCES)  # KernelBench's 1e-4
    # by KernelBench's rule alone outputs near zero fail: float32 is ~1e-3 off them in any order
    assert compare_outputs(honest, ref, tol, "signed-normal") is not None
    assert compare_outputs(honest, ref, tol, "signed-normal", exact=exact) is None


def _serial_column_sum(rows=16384, cols=512, seed=0):
    """KernelBench's 47_Sum_reduction_over_a_dimension as the offline proposer's column kernel sums
    it (one float32 accumulator per output, row after row), on signed inputs: the reference's
    float32 (PyTorch's blocked sum), that kernel, float64."""
    x = torch.randn(4, rows, cols, generator=torch.Generator().manual_seed(seed))
    acc = torch.zeros(4, cols)
    for r in range(rows):
        acc += x[:, r, :]
    return x.sum(1, keepdim=True), acc.unsqueeze(1), x.double().sum(1, keepdim=True)


def test_a_serial_float32_sum_passes_on_signed_inputs_measured_against_the_outputs_scale():
    # On the H200, 2 of 524,160 outputs of that kernel on the signed-normal set were 4.7e-4 off a
    # reference of 0.0024 (outputs ~64 across): rounding of a sum of 4096 float32 values whose true
    # value is near zero, 1e-5 of the output's scale. KernelBench's positive inputs never ask it.
    ref, serial, exact = _serial_column_sum()
    tol = dict(DEFAULT_TOLERANCES)
    assert compare_outputs(serial, ref, tol, "signed-normal") is not None  # KernelBench's rule alone
    assert compare_outputs(serial, ref, tol, "signed-normal", exact=exact) is None
    # still caught: rounded through bfloat16, or a sum that drops the last row
    low = ref.to(torch.bfloat16).float()
    assert "outside atol" in compare_outputs(low, ref, tol, "signed-normal", exact=exact).note
    x = torch.randn(4, 16384, 512, generator=torch.Generator().manual_seed(0))
    short = x[:, :-1].sum(1, keepdim=True)
    assert "outside atol" in compare_outputs(short, ref, tol, "signed-normal", exact=exact).note


def test_the_float64_allowance_does_not_let_lower_precision_through():
    ref, _, exact = _signed_matvec()
    tol = dict(DEFAULT_TOLERANCES)
    low = (ref.to(torch.bfloat16)).float()
    m = compare_outputs(low, ref, tol, "signed-normal", exact=exact)
    assert m is not None and "outside atol" in m.note


def test_fraction_right_tells_numbers_far_below_atol_apart():
    """A softmax over 32,768 columns: every number ~3e-5, under KernelBench's atol of 1e-4. The
    share looks at them at their own size: PyTorch's own output all right, another set's all
    wrong, and each number of one depends on the inputs."""
    from htam_engine.evaluate.checks.compare import fraction_right

    g = torch.Generator().manual_seed(0)
    ref, other = (torch.softmax(torch.rand(2, 32768, generator=g), dim=1) for _ in range(2))
    assert fraction_right(ref.clone(), ref, DEFAULT_TOLERANCES, other) == 1.0
    assert fraction_right(other, ref, DEFAULT_TOLERANCES, other) == 0.0
    assert fraction_right(ref * 1.5, ref, DEFAULT_TOLERANCES) == 0.0


def test_fraction_right_counts_the_elements_within_tolerance_over_every_output():
    from htam_engine.evaluate.checks.compare import fraction_right

    ref = torch.randn(4, 8)
    out = ref.clone()
    out[-1] = float("nan")  # one row of four wrong
    assert fraction_right(out, ref, DEFAULT_TOLERANCES) == 0.75
    assert fraction_right((out, ref), (ref, ref), DEFAULT_TOLERANCES) == 0.875  # weighted by elements
    assert fraction_right(ref + 1e-7, ref, DEFAULT_TOLERANCES) == 1.0
    assert fraction_right(torch.zeros(2), ref, DEFAULT_TOLERANCES) == 0.0  # another shape: all wrong
    ints = torch.arange(10)
    assert fraction_right(torch.where(ints < 3, -1, ints), ints, DEFAULT_TOLERANCES) == 0.7


def test_fraction_right_against_another_set_counts_only_what_depends_on_the_inputs():
    """A ReLU's zeros where both sets' references have them say nothing of who computed them: a
    kernel that wrote all zeros (run on garbage) gets the third of the rest where this set's
    reference is zero, PyTorch's right output all of it; a constant output counts nothing."""
    from htam_engine.evaluate.checks.compare import fraction_right

    torch.manual_seed(0)
    ref, other = torch.relu(torch.randn(100_000)), torch.relu(torch.randn(100_000))
    zeros = torch.zeros_like(ref)
    assert fraction_right(zeros, ref, DEFAULT_TOLERANCES) == pytest.approx(0.5, abs=0.01)
    assert fraction_right(zeros, ref, DEFAULT_TOLERANCES, other) == pytest.approx(1 / 3, abs=0.01)
    assert fraction_right(ref.clone(), ref, DEFAULT_TOLERANCES, other) == 1.0
    ones = torch.ones(10)
    assert fraction_right(ones, ones, DEFAULT_TOLERANCES, ones.clone()) == 0.0  # nothing depends on the inputs
    # a structure the other set does not share: every number counts, as without it
    assert fraction_right(zeros, ref, DEFAULT_TOLERANCES, torch.zeros(3)) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("share,outside", [(0.9, False), (1.2, True)])
def test_one_element_past_its_allowance_is_a_mismatch_however_small_against_the_whole(share, outside):
    """KernelBench's per-element rule at its edge: |out - ref| <= atol + rtol * |ref| (1e-4 each for
    float32). One element of 100,000 at 1.2x its allowance fails, though the whole-output norm is
    far within its bound; at 0.9x it passes."""
    ref = torch.ones(100_000)
    new = ref.clone()
    new[77_777] += share * (1e-4 + 1e-4 * 1.0)
    m = compare_outputs(new, ref, {"float32": 1e-4}, "a set")
    assert (m is not None) == outside, m
    if outside:
        assert "1 of 100000 elements outside" in m.note and m.where == [77_777], m


def test_on_htams_own_sets_a_millionth_of_the_elements_may_be_outside():
    """KernelBench's 2/33 (GEMM, scale, BatchNorm) on the rows-apart set: an honest kernel had 1 of
    8,388,608 outputs outside the per-element test. On a set beyond KernelBench's own (the float64
    yardstick passed) a millionth of the elements may be; on KernelBench's own sets none may, and
    an output under a million elements gets no allowance."""
    ref = torch.ones(2_100_000)
    exact = ref.double()
    new = ref.clone()
    new[[5, 1_000_000]] += 0.01  # two elements 50x past their allowance; the whole-output norm far within
    assert compare_outputs(new, ref, {"float32": 1e-4}, "rows apart", exact=exact) is None
    assert "2 of 2100000 elements outside" in compare_outputs(new, ref, {"float32": 1e-4}, "get_inputs#0").note
    new[7] += 0.01  # three: past the allowance of two
    assert "3 of 2100000" in compare_outputs(new, ref, {"float32": 1e-4}, "rows apart", exact=exact).note
    small = torch.ones(999_999)
    off = small.clone()
    off[3] += 0.01
    assert compare_outputs(off, small, {"float32": 1e-4}, "rows apart", exact=small.double()) is not None
