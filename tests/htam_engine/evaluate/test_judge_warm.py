"""A judge takes torch's lazy imports when it starts, not in its first load of a problem.

Loading a problem draws its inputs on the meta device (to size shared buffers and find an
unseen shape); torch imports sympy and torch._dynamo on the first such operation, which on a
GPU costs seconds of a check slot. Each case runs in a fresh interpreter, as a new judge would.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from htam_engine.problems import load_problem

# Prints how many modules a problem's load in the judge imported after (optionally) a judge's start.
PROBE = """
import pickle, sys
import torch
from htam_engine.problems.loader import load_for_judge
problems = pickle.loads(sys.stdin.buffer.read())
if sys.argv[1] == "warm":
    from htam_engine.evaluate.judge import Judge
    Judge("cuda", lambda msg: None).close()  # a GPU judge's start (without a GPU its CUDA warm-up fails quietly)
before = set(sys.modules)
for p in problems:
    assert load_for_judge(p, "cpu").unseen is not None, p.id
print(len([m for m in set(sys.modules) - before if not m.startswith("htam_problem_")]))  # the problems themselves aside
"""


def _imported_by_load(warm: bool) -> int:
    problems = [load_problem(name) for name in ("add_broadcast", "layernorm")]
    out = subprocess.run([sys.executable, "-c", PROBE, "warm" if warm else "cold"], input=pickle.dumps(problems),
                         capture_output=True, check=True, timeout=300)
    return int(out.stdout.decode().split()[-1])


def test_a_problems_meta_path_imports_nothing_after_a_judge_starts():
    if _imported_by_load(warm=False) == 0:
        pytest.skip("this torch imports nothing lazily on its first meta-device operations")
    assert _imported_by_load(warm=True) == 0
