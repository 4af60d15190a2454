"""Operator family classification, on built-in sources and KernelBench files."""

from __future__ import annotations

import pytest
from tests.conftest import kernelbench_root

from htam_engine.families import Family
from htam_engine.problems import classify_family, load_problem

BUILTIN = {
    "relu": Family.ELEMENTWISE,
    "softmax": Family.NORMALIZATION,
    "rmsnorm": Family.NORMALIZATION,
    "mse_loss": Family.REDUCTION,
    "matmul": Family.MATMUL,
    "conv2d": Family.CONVOLUTION,
    "matmul_bias_gelu": Family.FUSED_CHAIN,
    "mean_tanh_scale": Family.FUSED_CHAIN,
    "causal_attention": Family.ATTENTION,
    "residual_conv_block": Family.WHOLE_MODEL,
}

KERNELBENCH = {
    "level1/19_ReLU.py": Family.ELEMENTWISE,
    "level1/1_Square_matrix_multiplication_.py": Family.MATMUL,
    "level1/23_Softmax.py": Family.NORMALIZATION,
    "level1/36_RMSNorm_.py": Family.NORMALIZATION,
    "level1/47_Sum_reduction_over_a_dimension.py": Family.REDUCTION,
    "level1/100_HingeLoss.py": Family.REDUCTION,
    "level1/63_conv_standard_2D__square_input__square_kernel.py": Family.CONVOLUTION,
    "level1/97_ScaledDotProductAttention.py": Family.ATTENTION,
    "level2/1_Conv2D_ReLU_BiasAdd.py": Family.FUSED_CHAIN,
    "level2/12_Gemm_Multiply_LeakyReLU.py": Family.FUSED_CHAIN,
    "level3/1_MLP.py": Family.WHOLE_MODEL,
    "level3/43_MinGPTCausalAttention.py": Family.ATTENTION,
    "level3/35_LSTM.py": Family.WHOLE_MODEL,
}


@pytest.mark.parametrize("name,family", sorted(BUILTIN.items()))
def test_builtin_family(name, family):
    assert load_problem(name).family is family


@pytest.mark.parametrize("rel,family", sorted(KERNELBENCH.items()))
def test_kernelbench_family(rel, family):
    root = kernelbench_root()
    if root is None:
        pytest.skip("HTAM_KERNELBENCH not set")
    path = root / rel
    assert classify_family(path.read_text(), level=int(rel[5])) is family


def test_unparsable_source_is_other():
    assert classify_family("def (") is Family.OTHER
