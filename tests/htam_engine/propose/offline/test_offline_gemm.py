"""Triton GEMMs at float32 accuracy, with fused epilogues, are correct for every GEMM knob (interpreter).

The matrix-product layouts of KernelBench level 1 (square, batched, transposed views, a 3-D
tensor times a matrix, einsum, tall-skinny, long K split into slices) and level 2's linear
layers with their tails fused into the epilogue (bias per column, scalars, a residual of the
output's shape, broadcast per-row values).
"""

from __future__ import annotations

import pytest

from htam_engine.propose.offline import Knob, Unsupported, generate, plan_problem, plan_space

from offline_support import HAS_CUDA, InterpreterBatch, assert_ok, write_problem

pytestmark = pytest.mark.skipif(HAS_CUDA, reason="interpreter checks run on CPU-only machines")

PRODUCTS = {
    "square": ("return torch.matmul(a, b)", "[torch.randn(37, 37), torch.randn(37, 37)]"),
    "batched": ("return torch.bmm(a, b)", "[torch.randn(3, 20, 33), torch.randn(3, 33, 18)]"),
    "t_a": ("return torch.matmul(a.T, b)", "[torch.randn(40, 21), torch.randn(40, 30)]"),
    "t_b": ("return a @ b.T", "[torch.randn(21, 40), torch.randn(30, 40)]"),
    "t_both": ("return torch.matmul(a.T, b.T)", "[torch.randn(40, 21), torch.randn(30, 40)]"),
    "tensor3d": ("return torch.matmul(a, b)", "[torch.randn(2, 17, 24), torch.randn(24, 19)]"),
    "einsum": ('return torch.einsum("bijl,lk->bijk", a, b)', "[torch.randn(2, 3, 5, 16), torch.randn(16, 9)]"),
    "tall": ("return torch.matmul(a, b)", "[torch.randn(90, 6), torch.randn(6, 70)]"),
    "long_k": ("return torch.matmul(a, b)", "[torch.randn(12, 1100), torch.randn(1100, 20)]"),
    # the triangle is the epilogue; tiles it zeroes skip their product
    "triu": ("return torch.triu(torch.matmul(a, b), diagonal=1)", "[torch.randn(70, 40), torch.randn(40, 70)]"),
    "tril": ("return torch.tril(a @ b) * 2.0", "[torch.randn(70, 40), torch.randn(40, 66)]"),
}
# tile, split-K (the long-K case runs 4 slices), 64-bit offsets, pipelining and swizzle settings
GEMM_SETTINGS = {
    # float32 FMA reading the views in place; the split-float32 tensor-core products on K-major copies
    # (the interpreter computes both dots in float32: precision is measured on the GPU, the copies here)
    "small": {Knob.GEMM_TILE: "32x32x32", Knob.GEMM_PRECISION: "ieee", Knob.GEMM_OPERANDS: "strided"},
    "tensor": {Knob.GEMM_TILE: "32x32x32", Knob.GEMM_PRECISION: "tf32x3", Knob.GEMM_OPERANDS: "k_major"},
    "split": {Knob.GEMM_TILE: "32x32x32", Knob.GEMM_SPLIT_K: 4},
    "wide": {Knob.GEMM_TILE: "64x32x32", Knob.INDEX: "int64", Knob.GEMM_GROUP: 1, Knob.GEMM_STAGES: 2},
}
SUMMED = """
class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.gemm = nn.Linear(i, o)
    def forward(self, x):
        y = self.gemm(x) / 2.0 * 3.0
        return torch.tanh(torch.sum(y, dim=1, keepdim=True))
"""
LINEAR_TAIL = """
class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.gemm = nn.Linear(i, o)
        self.scale = nn.Parameter(torch.randn(o) * 0.5 + 1.0)
    def forward(self, x, r, g):
        y = self.gemm(x) * self.scale
        y = F.gelu(y) + r - 0.5 * g
        return torch.clamp(y, min=-1.0)
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    d = tmp_path_factory.mktemp("offline_gemm")
    batch = InterpreterBatch()
    for name, (body, inputs) in PRODUCTS.items():
        p = write_problem(d, name, f"class Model(nn.Module):\n    def forward(self, a, b):\n        {body}\n", inputs)
        for setting, knobs in GEMM_SETTINGS.items():
            batch.add(f"{name}-{setting}", p, knobs)
    tail = write_problem(d, "linear_tail", LINEAR_TAIL,
                         "[torch.randn(6, 40), torch.randn(6, 24), torch.randn(6, 1)]", "[40, 24]")
    batch.add("tail-fused", tail, {Knob.GEMM_KERNEL: "triton", Knob.GEMM_TILE: "32x32x32"})
    # a short K is never split by the launch; forcing 2 slices checks the sum kernel's epilogue
    batch.add("tail-fused-split", tail, {Knob.GEMM_KERNEL: "triton", Knob.GEMM_TILE: "32x32x32", Knob.GEMM_SPLIT_K: 2},
              edit=lambda c: c.replace("triton.cdiv(K, 4 * BK)", "2"))
    batch.add("tail-library", tail, {Knob.GEMM_KERNEL: "library"})
    for name in ("t_a", "t_b", "t_both"):  # transposed views copied row-major before the product
        p = write_problem(d, f"{name}_rows", f"class Model(nn.Module):\n    def forward(self, a, b):\n"
                                             f"        {PRODUCTS[name][0]}\n", PRODUCTS[name][1])
        batch.add(f"{name}-contiguous", p, {Knob.GEMM_TILE: "32x32x32", Knob.GEMM_OPERANDS: "contiguous"})
    matvec = write_problem(d, "matvec", "class Model(nn.Module):\n    def forward(self, a, b):\n"
                                        "        return torch.matmul(a, b) * 0.5\n",
                           "[torch.randn(40, 3000), torch.randn(3000, 1)]")
    batch.add("matvec", matvec)
    batch.add("matvec-split", matvec, {Knob.SPLIT: "wide", Knob.ROW_BLOCK: 256, Knob.ROW_PASS: "multi"})
    summed = write_problem(d, "summed", SUMMED, "[torch.randn(6, 40)]", "[40, 24]")
    batch.add("summed-first", summed, move="sum_first")
    batch.add("summed-gemm", summed, {Knob.GEMM_KERNEL: "triton", Knob.GEMM_TILE: "32x32x32"})
    return batch.run()


@pytest.mark.parametrize("setting", sorted(GEMM_SETTINGS))
@pytest.mark.parametrize("case", sorted(PRODUCTS))
def test_matrix_products_every_gemm_setting(checked, case, setting):
    assert_ok(checked, f"{case}-{setting}")


def test_fma_products_are_exact_float32_and_read_transposed_views_in_place(checked):
    code = checked["_codes"]["t_both-small"]
    assert 'input_precision="ieee"' in code and "allow_tf32" not in code
    assert "getattr(a, 'T')" in code and "_gemm_0(t_getattr_1, t_getattr_2)" in code  # the views, not copies
    assert ".contiguous()" not in code.split("def _gemm_0")[1].split("class ModelNew")[0]


@pytest.mark.parametrize("case", ["t_a", "t_b", "t_both"])
def test_transposed_operands_copied_row_major_first(checked, case):
    code = checked["_codes"][f"{case}-contiguous"]
    assert "a3.float().contiguous(), b3.float().contiguous()" in code
    assert_ok(checked, f"{case}-contiguous")


@pytest.mark.parametrize("case", ["square", "t_a", "t_b", "t_both", "batched"])
def test_tensor_core_products_read_k_major_copies(checked, case):
    code = checked["_codes"][f"{case}-tensor"]
    assert 'input_precision="tf32x3"' in code and "b3 = b3.transpose(1, 2).contiguous().transpose(1, 2)" in code
    assert_ok(checked, f"{case}-tensor")


def test_aligned_products_default_to_tensor_cores_and_unaligned_ones_to_fma(tmp_path):
    def space(k: int, tail: str):
        p = write_problem(tmp_path, f"k{k}{len(tail)}", "class Model(nn.Module):\n    def forward(self, a, b):\n"
                                                         f"        return (a @ b){tail}\n",
                          f"[torch.randn(8, {k}), torch.randn({k}, 8)]")
        return plan_space(plan_problem(p, "triton"), "triton").defaults()

    aligned, odd, odd_tail = space(64, ""), space(37, ""), space(37, " * 2.0")
    assert (aligned[Knob.GEMM_PRECISION], aligned[Knob.GEMM_OPERANDS]) == ("tf32x3", "k_major")
    assert (odd[Knob.GEMM_PRECISION], odd[Knob.GEMM_OPERANDS]) == ("ieee", "strided")
    assert space(64, " * 2.0")[Knob.GEMM_KERNEL] == "triton"  # beats the library's product with a tail after it
    assert odd_tail[Knob.GEMM_KERNEL] == "library"


def test_long_k_is_split_into_slices_summed_by_a_second_kernel(checked):
    code = checked["_codes"]["long_k-split"]
    assert "_k_gemm_0_sum[" in code and "SPLIT_K=split" in code
    assert_ok(checked, "long_k-split")


def test_64_bit_offsets_without_a_32_bit_branch(checked):
    kernel = checked["_codes"]["square-wide"].split("def _k_gemm_0(")[1].split("@triton.jit")[0]
    assert "rm = rm.to(tl.int64)" in kernel and "if BIG" not in kernel


def test_the_tail_runs_in_the_gemm_epilogue(checked):
    fused = checked["_codes"]["tail-fused"]
    assert "_region_0(" not in fused.split("class ModelNew")[1]  # one kernel: the region's call is gone
    assert "tl.erf(" in fused.split("def _k_gemm_0(")[1].split("@triton.jit")[0]
    assert_ok(checked, "tail-fused")
    assert_ok(checked, "tail-fused-split")


def test_library_product_with_the_tail_fused_after_it(checked):
    library = checked["_codes"]["tail-library"]
    assert "torch.nn.functional.linear(a, b, bias)" in library and "_region_0(" in library
    assert_ok(checked, "tail-library")


def test_a_bare_product_is_a_triton_gemm_only(tmp_path):
    p = write_problem(tmp_path, "mm", "class Model(nn.Module):\n    def forward(self, a, b):\n"
                      "        return a @ b\n", "[torch.randn(4, 8), torch.randn(8, 4)]")
    space = plan_space(plan_problem(p), "triton")
    assert space.specs[Knob.GEMM_KERNEL].values == ("triton",)  # the library alone is not a candidate
    for backend in ("cuda", "cpp"):
        with pytest.raises(Unsupported, match="bare matrix product"):
            generate(p, backend)


def test_a_triangular_output_skips_the_tiles_it_zeroes(checked):
    code = checked["_codes"]["triu-small"]
    assert "k_hi = tl.where(pid_n * BN + BN - 1 - pid_m * BM < 1, k_lo, k_hi)" in code
    assert "torch.triu" not in code.split("class ModelNew")[1]
    assert_ok(checked, "triu-small")
    assert_ok(checked, "tril-split")


def test_a_product_summed_over_its_columns_is_summed_first(checked):
    code = checked["_codes"]["summed-first"].split("class ModelNew")[1]
    assert "= _gemm_0(" not in code and "_colsum = _region_0(self.gemm.weight)" in code
    assert "_biassum = _region_1(self.gemm.bias)" in code
    assert_ok(checked, "summed-first")
    assert_ok(checked, "summed-gemm")  # the plan without the rewrite, for comparison


def test_the_safe_kernel_leaves_a_product_with_a_tail_to_the_library_and_a_bare_one_to_float32_fma(tmp_path):
    tail = write_problem(tmp_path, "tail", LINEAR_TAIL, "[torch.randn(6, 40), torch.randn(6, 24), torch.randn(6, 1)]",
                         "[40, 24]")
    bare = write_problem(tmp_path, "bare", "class Model(nn.Module):\n    def forward(self, a, b):\n"
                                           "        return a @ b\n", "[torch.randn(8, 64), torch.randn(64, 8)]")
    with_tail, alone = generate(tail, "triton", move="safe_kernel"), generate(bare, "triton", move="safe_kernel")
    assert generate(tail, "triton").settings[Knob.GEMM_KERNEL] == "triton"  # the default the repair leaves
    assert with_tail.settings[Knob.GEMM_KERNEL] == "library" and "torch.nn.functional.linear" in with_tail.code
    assert (alone.settings[Knob.GEMM_KERNEL], alone.settings[Knob.GEMM_PRECISION]) == ("triton", "ieee")
    assert 'input_precision="ieee"' in alone.code


@pytest.mark.parametrize("case", ["matvec", "matvec-split"])
def test_a_matrix_vector_product_is_a_row_reduction(checked, case):
    code = checked["_codes"][case]
    assert "_k_gemm" not in code and "tl.dot" not in code  # no 16-column tile for one output column
    assert_ok(checked, case)

