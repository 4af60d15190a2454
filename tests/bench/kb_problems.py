"""KernelBench problems for the GPU bench scripts: their input and output bytes, and copies
shrunk to a byte budget so the same scripts run end to end on a CPU at small sizes.

Input bytes come from `htam problems PATH --json` (shapes and dtypes from get_inputs on the meta
device); output bytes from the reference run on the meta device (no memory touched).
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
          "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}


def listed(*paths: str | Path) -> list[dict[str, Any]]:
    """`htam problems PATHS --json`, each entry with its input_bytes."""
    proc = subprocess.run([sys.executable, "-m", "htam_engine", "problems", *map(str, paths), "--json"],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    docs = json.loads(proc.stdout)
    for d in docs:
        d["input_bytes"] = input_bytes(d) if not d.get("error") else None
    return docs


def input_bytes(doc: dict[str, Any]) -> int:
    return sum(math.prod(t["shape"]) * _BYTES.get(t["dtype"], 0) for t in doc.get("inputs", []))


def problem_input_bytes(problem: Any) -> int:
    """Bytes of one input set of a loaded Problem."""
    return input_bytes({"inputs": [{"shape": t.shape, "dtype": t.dtype} for t in problem.inputs]})


def output_bytes(problem: Any) -> int | None:
    """Bytes of the reference's output, run on the meta device; None when it cannot run there."""
    import torch

    from htam_engine.problems.loader import execute_source

    try:
        module = execute_source(problem.source, str(problem.path), problem.overrides, keep=False)
        with torch.device("meta"), torch.no_grad():
            out = module.Model(*module.get_init_inputs())(*module.get_inputs())
    except Exception:  # noqa: BLE001 - an op without a meta kernel: the figure is left out
        return None
    leaves = out if isinstance(out, (tuple, list)) else [out]
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def _with_constant(source: str, name: str, value: int) -> str:
    """The source with the right-hand side of every top-level `name = ...` set to value."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            node.value = ast.Constant(value)
    return ast.unparse(tree) + "\n"


def shrunk_copy(path: Path, budget_bytes: int, folder: Path) -> Path | None:
    """A copy of the problem file whose inputs fit the budget: the largest integer constant
    halved until they do (others tried when a halving breaks the file). None if none fits."""
    from htam_engine.problems import ProblemError, load_problem

    source = path.read_text()
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / path.name
    dest.write_text(source)
    for _ in range(64):
        try:
            problem = load_problem(str(dest))
        except ProblemError:
            return None
        if problem_input_bytes(problem) <= budget_bytes:
            return dest
        ints = sorted(((v, k) for k, v in problem.constants.items() if type(v) is int and v > 1), reverse=True)
        for value, name in ints:
            trial = _with_constant(source, name, value // 2)
            dest.write_text(trial)
            try:
                load_problem(str(dest))
            except ProblemError:
                continue
            source = trial
            break
        else:
            return None
    return None


def gib(n: float | None) -> str:
    return "-" if n is None else f"{n / 2**30:.3f} GiB"
