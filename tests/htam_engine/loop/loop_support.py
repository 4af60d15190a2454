"""Engine test support: a small problem, an honest Triton candidate (TRITON_INTERPRET=1 in the
worker), the loopback model server as the proposer, fast evaluation settings.

Most scripted replies are candidates the static checks reject in the parent process
(no kernel at all): they flow through the whole loop at no evaluation cost. Only the
tests that need a correct result evaluate the Triton candidate in a real worker.
"""

from __future__ import annotations

from pathlib import Path

from htam_engine.evaluate.config import EvalConfig
from htam_engine.propose.pricing import Price
from tests.support.loopback_server import Reply

DATA = Path(__file__).parent / "data"
PROBLEM_PATH = DATA / "scale_relu.py"
TRITON_CODE = (DATA / "triton_scale_relu.py").read_text()
# A module with ModelNew but no kernel: rejected by the static checks, never compiled.
NO_KERNEL = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x * 2.0 - 1.0)\n"
MODEL = "loopback-model"
PRICE = Price(1000.0, 1000.0)  # USD per 1M tokens: 1 ms of money per token, easy to count


def fenced(code: str) -> str:
    return f"Here is the kernel.\n\n```python\n{code}```\n"


def reply(code: str, prompt_tokens: int = 400, completion_tokens: int = 100) -> Reply:
    return Reply(fenced(code), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def fast_eval() -> EvalConfig:
    return EvalConfig(backend="triton", device="cpu", timeout_s=120.0, trials=3, warmup=1,
                      time_compile_baseline=False, correctness_trials=1)


class RecordingProposer:
    """Test double around a real proposer: records every request the engine made."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.requests = []

    async def propose(self, request, on_token=None):
        self.requests.append(request)
        return await self.inner.propose(request, on_token)

    async def reflect(self, request, code, result):
        return await self.inner.reflect(request, code, result)


