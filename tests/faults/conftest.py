"""Fault-suite fixtures: the figures recorder (dumped for tests/bench/fault_figures.py)."""

from __future__ import annotations

import os

import pytest
from fault_support import Figures

_FIGURES = Figures()


@pytest.fixture(scope="session")
def figures() -> Figures:
    return _FIGURES


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("HTAM_FAULT_FIGURES")
    if path and _FIGURES.rows:
        _FIGURES.dump(path)
