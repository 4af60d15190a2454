"""Proposer tests: the loopback model server fixture and settings that point at it."""

from __future__ import annotations

import pytest

from htam_engine.propose.config import Config, load_config
from tests.support.loopback_server import LoopbackServer, loopback  # noqa: F401 - the fixture

TEST_KEY = "sk-htam-test-0123456789abcdefSECRET"


@pytest.fixture
def model_config(loopback: LoopbackServer, tmp_path) -> Config:  # noqa: F811
    """Settings for the loopback server: fast backoff, short timeouts, a known secret key."""
    cfg = load_config(
        {**loopback.config_overrides(), "retries": 3, "timeout_s": 10.0},
        env={"OPENAI_API_KEY": TEST_KEY},
        user_file=tmp_path / "none.toml",
        project_file=tmp_path / "none-either.toml",
    )
    cfg.model.backoff_base_s = 0.02
    cfg.model.backoff_max_s = 0.1
    cfg.model.stall_timeout_s = 0.5
    return cfg


PROBLEM_SOURCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
'''

GOOD_CODE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = "torch::Tensor relu(torch::Tensor x) { auto y = torch::empty_like(x); return y; }"
ext = load_inline(name="relu_ext", cpp_sources=src, functions=["relu"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu(x.contiguous())
'''


def fenced(code: str, lang: str = "python") -> str:
    return f"Here is the kernel.\n\n```{lang}\n{code}```\n\nIt fuses the work into one pass.\n"


def make_request(**kw):
    """A ProposalRequest for a small ReLU problem (fields overridable)."""
    from htam_engine.families import Backend, Bottleneck, Family
    from htam_engine.memory.types import DirectionScore, Retrieval, Selection, State, StrategyView, TransitionNote
    from htam_engine.problems.model import Problem, TensorSpec
    from htam_engine.propose.base import ProposalRequest

    problem = Problem(
        id="builtin:relu", name="relu", source=PROBLEM_SOURCE, family=Family.ELEMENTWISE, inputs=[TensorSpec([16, 1024], "float32")]
    )
    backend = kw.pop("backend", Backend.CPP)
    state = State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", backend)
    selection = Selection(
        direction="memory_access",
        scores=[DirectionScore("memory_access", 1.2, 0.5, 0.6, 0.1), DirectionScore("fusion", 0.9, 0.3, 0.5, 0.1)],
        mode="argmax",
        reason="memory_access: prior 0.60 for memory-bound elementwise, transition +0.50 after fusion",
    )
    retrieval = Retrieval(
        direction="memory_access",
        strategies=[
            StrategyView("s1", "memory_access", "Vectorized loads", "Load 4 floats at a time when the size allows.", "Handle the tail.", tries=3, successes=2, mean_gain=0.4),
            StrategyView("s2", "memory_access", "Grid-stride loop", "One persistent loop over the whole tensor."),
        ],
        notes=[TransitionNote("fusion", "memory_access", when="after fusing a chain", why="the fused kernel is bandwidth-bound", risk="misaligned tails")],
    )
    fields = dict(problem=problem, backend=backend, state=state, selection=selection, retrieval=retrieval)
    fields.update(kw)
    return ProposalRequest(**fields)


@pytest.fixture
def kit():
    """Shared test material (conftest modules are not importable from tests)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        make_request=make_request, fenced=fenced, GOOD_CODE=GOOD_CODE, PROBLEM_SOURCE=PROBLEM_SOURCE, TEST_KEY=TEST_KEY
    )
