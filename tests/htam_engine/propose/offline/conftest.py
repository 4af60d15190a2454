"""Triton candidates run under the interpreter on machines without a GPU."""

from __future__ import annotations

import pytest

from tests.conftest import HAS_CUDA  # noqa: F401 - documented dependency on the shared switch


@pytest.fixture
def interpret(monkeypatch):
    if HAS_CUDA:
        pytest.skip("interpreter tests run on CPU-only machines")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
