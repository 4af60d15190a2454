"""A worker takes torch's lazy imports when it starts, not in its first check.

The checks draw a problem's inputs on the meta device (to find an unseen shape); torch
imports sympy and torch._dynamo on the first such operation, which on a GPU costs seconds of
a check slot. Each case runs in a fresh interpreter, as a new worker would.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from htam_engine.problems import load_problem

# Prints how many modules the checks' meta-device path imported after (optionally) a GPU
# worker's start.
PROBE = """
import pickle, sys
import torch
from htam_engine.problems import unseen_shape_overrides
from htam_engine.evaluate.runner import Runner
problems = pickle.loads(sys.stdin.buffer.read())
if sys.argv[1] == "warm":
    Runner("cuda", lambda msg: None)  # a GPU worker's start (without a GPU its CUDA warm-up fails quietly)
before = set(sys.modules)
for p in problems:
    assert unseen_shape_overrides(p), p.id
print(len(set(sys.modules) - before))
"""


def _imported_by_checks(warm: bool) -> int:
    problems = [load_problem(name) for name in ("add_broadcast", "layernorm")]
    out = subprocess.run([sys.executable, "-c", PROBE, "warm" if warm else "cold"], input=pickle.dumps(problems),
                         capture_output=True, check=True, timeout=300)
    return int(out.stdout.decode().split()[-1])


def test_checks_meta_path_imports_nothing_after_a_gpu_worker_starts():
    if _imported_by_checks(warm=False) == 0:
        pytest.skip("this torch imports nothing lazily on its first meta-device operations")
    assert _imported_by_checks(warm=True) == 0
