"""The loopback model server's side of the app's real-engine tests and bench: a small problem,
an honest Triton candidate for it (run with TRITON_INTERPRET=1 in the worker), a module with no
kernel (rejected by the static checks, never compiled), and quick evaluation settings."""

from __future__ import annotations

from pathlib import Path

from htam_engine.evaluate.config import EvalConfig
from tests.support.loopback_server import Reply

DATA = Path(__file__).parent / "data"
PROBLEM_PATH = DATA / "double_relu.py"
TRITON_CODE = (DATA / "triton_double_relu.py").read_text()
NO_KERNEL = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x * 2.0)\n"
MODEL = "loopback-model"


def reply(code: str, **kw) -> Reply:
    return Reply(f"Here is the kernel.\n\n```python\n{code}```\n", prompt_tokens=400, completion_tokens=100, **kw)


def fast_eval() -> EvalConfig:
    return EvalConfig(backend="triton", device="cpu", timeout_s=120.0, trials=3, warmup=1,
                      time_compile_baseline=False, correctness_trials=1)
