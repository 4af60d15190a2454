"""Shared test setup: GPU marks skip cleanly without CUDA; one compile cache for the run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


# One torch-extension build folder for the whole run, so a source compiled by one
# test is reused by the next (a CPU load_inline compile costs ~20 s).
_BUILD = Path(os.environ.get("HTAM_TEST_CACHE") or Path(tempfile.gettempdir()) / "htam-test-cache")
_BUILD.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("HTAM_CACHE_DIR", str(_BUILD))
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(_BUILD / "torch_extensions"))

# The tests find a KernelBench checkout the same way the product does (HTAM_KERNELBENCH).
from htam_engine.problems.loader import kernelbench_root  # noqa: E402,F401 - re-exported for tests


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _has_cuda()


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_logreport(report):
    """With HTAM_TEST_FAILURES_NOW=1 (the GPU runs: gpu_all.sh), a failure's traceback is written
    as the test ends, not in the summary at the end: a run cut at its time limit has no summary."""
    if report.failed and os.environ.get("HTAM_TEST_FAILURES_NOW"):
        import sys

        print(f"\n--- {report.nodeid} ({report.when}) failed:\n{report.longreprtext[-4000:]}\n---", file=sys.stderr,
              flush=True)
