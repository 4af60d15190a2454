"""Shared helpers for the offline proposer's tests: problem files and in-process checking."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import torch

from htam_engine.problems import instantiate, load_problem
from htam_engine.problems.model import Problem
from tests.conftest import HAS_CUDA  # noqa: F401 - re-exported for the tests

# An elementwise tail after a convolution (Model(cin, cout, bias_shape); `conv` one cuDNN also runs
# channels-last); `extra` is an operand along the last dim (a band that cuts the rows below the
# spatial dims, so a channels-last tail reads a copy) or 1.
CONV_EW_TAIL = """
class Model(nn.Module):
    def __init__(self, cin, cout, bias_shape):
        super().__init__()
        self.conv = nn.{conv}(cin, cout, 3)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.extra = nn.Parameter(torch.randn({extra}))
    def forward(self, x):
        x = self.conv(x)
        return F.hardswish(torch.relu(x) + self.bias) * self.extra
"""

# RMS norm over the channels of an NCHW tensor: the reduced dim is not the last one (inner > 1)
RMS_CHANNELS = """
class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.g = nn.Parameter(torch.rand(c, 1, 1) + 0.5)
    def forward(self, x):
        return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5) * self.g
"""


def write_problem(tmp_path: Path, name: str, body: str, inputs: str, init: str = "[]", consts: str = "") -> Problem:
    """A KernelBench-format file: `body` is Model's source; `inputs` the get_inputs expression."""
    text = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
    text += textwrap.dedent(body).strip() + "\n\n" + textwrap.dedent(consts).strip() + "\n\n"
    text += f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_problem(str(path))


def run_candidate(problem: Problem, code: str, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference and candidate outputs, built with equal seeds, on the same fresh inputs (in-process:
    only for Triton under the interpreter; compiled backends go through the harness)."""
    assert os.environ.get("TRITON_INTERPRET") == "1" or "triton" not in code
    ns: dict = {}
    exec(compile(code, f"<candidate {problem.id}>", "exec"), ns)  # noqa: S102 - our own generated module
    inst = instantiate(problem)
    init = inst.get_init_inputs()
    torch.manual_seed(seed)
    ref = inst.Model(*init)
    torch.manual_seed(seed)
    new = ns["ModelNew"](*init)
    torch.manual_seed(seed + 1)
    xs = inst.get_inputs()
    with torch.no_grad():
        return ref(*xs), new(*xs)


RUNNER = Path(__file__).with_name("interp_runner.py")


def interpret_batch(cases: list[dict]) -> dict[str, dict]:
    """Check Triton candidates in one fresh interpreter process (see interp_runner.py)."""
    return _run_batch(RUNNER, cases, {"TRITON_INTERPRET": "1"})


COMPILER = Path(__file__).with_name("compile_runner.py")


def compile_batch(cases: list[dict]) -> dict[str, dict]:
    """Compile every Triton kernel the candidates launch for an sm_90 GPU, in one fresh process
    (see compile_runner.py)."""
    return _run_batch(COMPILER, cases, {})


def _run_batch(runner: Path, cases: list[dict], extra_env: dict[str, str]) -> dict[str, dict]:
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[4]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(extra_env, PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, str(runner)], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"interpreter run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


class InterpreterBatch:
    """Triton candidates generated with given knobs, checked together in one interpreter process."""

    def __init__(self) -> None:
        self.cases: list[dict] = []
        self.codes: dict[str, str] = {}

    def add(self, cid: str, problem: Problem, knobs: dict | None = None, *, move: str | None = None,
            run_overrides: dict | None = None, tol: float = 1e-4, edit=None) -> str:
        from htam_engine.propose.offline import generate

        code = generate(problem, "triton", move, knobs).code
        self.codes[cid] = code
        self.cases.append({"id": cid, "problem": problem.path, "overrides": run_overrides or problem.overrides,
                           "code": edit(code) if edit else code, "rtol": tol, "atol": tol})
        return code

    def run(self) -> dict[str, dict]:
        results = interpret_batch(self.cases)
        results["_codes"] = self.codes
        return results


def assert_ok(checked: dict, cid: str) -> None:
    assert cid in checked, sorted(checked)
    assert checked[cid]["ok"], checked[cid]["message"]
