"""The proposer's contract: the retrieved strategies' templates steer the code it writes."""

from __future__ import annotations

import pytest

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory.types import Retrieval, Selection, State, StrategyView
from htam_engine.problems import load_problem
from htam_engine.propose.base import ProposalRequest
from htam_engine.propose.offline import TEMPLATE_IDS, OfflineProposer, supports

from offline_support import write_problem


def _request(problem, backend="triton", templates=(), **kw) -> ProposalRequest:
    state = State("start", problem.family, Bottleneck.MEMORY, "none", Backend(backend))
    strategies = [StrategyView(id=f"s{i}", direction="vectorization", title=t, description=t, template=t)
                  for i, t in enumerate(templates)]
    return ProposalRequest(problem=problem, backend=Backend(backend), state=state,
                           selection=Selection("vectorization", [], "argmax"),
                           retrieval=Retrieval("vectorization", strategies, []), **kw)


@pytest.fixture(scope="module")
def relu_problem():
    return load_problem("relu", {"batch_size": 4, "dim": 256})


def test_template_ids_and_support_table():
    assert set(TEMPLATE_IDS) == {
        "ew_fused_scalar", "ew_fused_vec4", "ew_grid_stride", "ew_fast_math", "row_reduce_block",
        "row_reduce_warp", "row_reduce_online", "row_reduce_vec4", "epilogue_fused", "epilogue_vec4"}
    assert supports("row_reduce_warp", "cuda", Family.NORMALIZATION)
    assert not supports("row_reduce_warp", "cpp", Family.NORMALIZATION)  # no warps on a CPU
    assert not supports("ew_fused_vec4", Backend.CUDA, Family.REDUCTION)
    assert not supports("no_such_template", "cuda", Family.ELEMENTWISE)


async def test_first_applicable_retrieved_template_wins(relu_problem):
    proposer = OfflineProposer()
    # a row template cannot change an elementwise problem, so the vec4 one (ranked second) is used
    req = _request(relu_problem, templates=["row_reduce_warp", "ew_fused_vec4", "ew_grid_stride"])
    prop = await proposer.propose(req)
    assert prop.code and prop.template == "ew_fused_vec4" and prop.failure == ""
    assert "tl.multiple_of" in prop.code and "ew_fused_vec4" in prop.prompt


async def test_direction_changes_the_code(relu_problem):
    proposer = OfflineProposer()
    codes = {}
    for tid in ("ew_fused_scalar", "ew_fused_vec4", "ew_grid_stride", "ew_fast_math"):
        for backend in ("triton", "cuda", "cpp"):
            prop = await proposer.propose(_request(relu_problem, backend, [tid]))
            assert prop.template == tid
            codes[(tid, backend)] = prop.code
    assert len(set(codes.values())) == len(codes)
    assert "float4" in codes[("ew_fused_vec4", "cuda")]
    assert "gridDim.x" in codes[("ew_grid_stride", "cuda")]


async def test_default_template_without_retrieval_and_streaming(relu_problem):
    seen: list[str] = []

    async def sink(chunk: str) -> None:
        seen.append(chunk)

    prop = await OfflineProposer().propose(_request(relu_problem, "cpp"), on_token=sink)
    assert prop.template == "ew_fused_scalar" and "".join(seen) == prop.code
    assert prop.model == "offline" and prop.usage.prompt_tokens == 0


async def test_samples_walk_down_the_list_and_never_repeat_the_best(relu_problem):
    proposer = OfflineProposer()
    ranked = ["ew_fast_math", "ew_fused_vec4"]
    first = await proposer.propose(_request(relu_problem, templates=ranked))
    second = await proposer.propose(_request(relu_problem, templates=ranked, sample=1))
    assert (first.template, second.template) == ("ew_fast_math", "ew_fused_vec4")
    again = await proposer.propose(_request(relu_problem, templates=ranked, best_code=first.code))
    assert again.template == "ew_fused_vec4"


async def test_unsupported_problem_fails_with_a_reason(tmp_path):
    p = write_problem(tmp_path, "cum", """
        class Model(nn.Module):
            def forward(self, x):
                return torch.cumsum(x, dim=1)
        """, "[torch.randn(4, 8)]")
    prop = await OfflineProposer().propose(_request(p, "cuda", ["ew_fused_vec4"]))
    assert prop.code is None and prop.failure == "offline proposer: cannot generate a kernel for torch.cumsum"


async def test_reflect_turns_outcomes_into_lessons(relu_problem):
    proposer = OfflineProposer()
    req = _request(relu_problem, "cuda", ["ew_fused_vec4"])
    prop = await proposer.propose(req)
    fast = EvalResult(status=Status.OK, correct=True, speedup_eager=1.8)
    lesson = await proposer.reflect(req, prop.code, fast)
    assert lesson is not None and lesson.direction == "vectorization" and "1.80x" in lesson.description
    broken = EvalResult.failure(Status.COMPILE_ERROR, "nvcc: error in line 3")
    lesson = await proposer.reflect(req, prop.code, broken)
    assert lesson is not None and "nvcc" in lesson.pitfalls
    even = EvalResult(status=Status.OK, correct=True, speedup_eager=1.0)
    assert await proposer.reflect(req, prop.code, even) is None
    assert await proposer.reflect(req, "class ModelNew: pass", fast) is None
