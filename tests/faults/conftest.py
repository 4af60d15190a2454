"""Fault-suite fixtures: the figures recorder (dumped for tests/bench/fault_figures.py)."""

from __future__ import annotations

import os

import fault_support
import pytest
from fault_support import Figures

_FIGURES = Figures()


@pytest.fixture(scope="module", autouse=True)
def _workers_of_other_files():
    """The workers alive when a file starts are not its own (another file's fixtures may still
    hold theirs in this process); its assertions about workers leave them out."""
    fault_support.IGNORED_WORKERS.clear()
    fault_support.IGNORED_WORKERS.update(p.pid for p in fault_support.worker_processes())
    yield
    fault_support.IGNORED_WORKERS.clear()


@pytest.fixture(scope="session")
def figures() -> Figures:
    return _FIGURES


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("HTAM_FAULT_FIGURES")
    if path and _FIGURES.rows:
        _FIGURES.dump(path)
