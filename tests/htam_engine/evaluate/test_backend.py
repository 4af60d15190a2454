"""Backend detection from candidate sources, and the seeding helper."""

import pytest
import torch.nn as nn

from htam_engine.evaluate.backend import detect_backend, resolve_backend
from htam_engine.evaluate.seeding import build_models


def test_detects_each_backend():
    assert detect_backend("src = '__global__ void k() {}'\nload_inline(name='a', cpp_sources='', cuda_sources=src)") == "cuda"
    assert detect_backend("import triton\n@triton.jit\ndef k(x): pass") == "triton"
    assert detect_backend("from torch.utils.cpp_extension import load_inline\nload_inline(name='a', cpp_sources=s)") == "cpp"
    assert detect_backend("import torch\nclass ModelNew: pass") is None


def test_explicit_backend_wins_and_is_validated():
    assert resolve_backend("@triton.jit", "cpp", "cpu") == "cpp"
    assert resolve_backend("class ModelNew: pass", None, "cuda") == "cuda"
    with pytest.raises(ValueError):
        resolve_backend("", "metal", "cpu")


def test_models_start_with_equal_parameters():
    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.a, self.b = nn.Linear(d, d), nn.Conv1d(d, d, 3)

    ref, new = build_models(Net, Net, [8], seed=7, device="cpu")
    for p, q in zip(ref.parameters(), new.parameters()):
        assert p.data_ptr() != q.data_ptr() and (p == q).all()
