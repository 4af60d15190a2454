"""The proposer's contract: strategies name moves, moves change settings, nothing is proposed twice."""

from __future__ import annotations

import pytest

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend, Bottleneck, ProposalOutcome
from htam_engine.memory.types import Retrieval, Selection, State, StrategyView
from htam_engine.problems import load_problem
from htam_engine.propose.base import MoveQuery, ProposalRequest
from htam_engine.propose.offline import Knob, OfflineProposer, parse_move, parse_settings, plan_problem, plan_space

from offline_support import write_problem


def _request(problem, backend="triton", moves=(), direction="parallel_mapping", **kw) -> ProposalRequest:
    state = State("start", problem.family, Bottleneck.MEMORY, "none", Backend(backend))
    strategies = [StrategyView(id=f"{direction}/s{i}", direction=direction, title=m, description=m, template=m)
                  for i, m in enumerate(moves)]
    return ProposalRequest(problem=problem, backend=Backend(backend), state=state,
                           selection=Selection(direction, [], "argmax"),
                           retrieval=Retrieval(direction, strategies, []), **kw)


def _query(problem, moves_by_direction: dict[str, list[str]], best_code=None, proposed=()) -> MoveQuery:
    """What the engine asks before a step: per direction, the moves its strategies name."""
    retrievals = {g: _request(problem, moves=moves, direction=g).retrieval for g, moves in moves_by_direction.items()}
    return MoveQuery(problem, Backend.TRITON, best_code, tuple(proposed), retrievals)


@pytest.fixture(scope="module")
def relu_problem():
    return load_problem("relu", {"batch_size": 4, "dim": 256})


async def test_the_fused_plan_comes_first_with_its_default_settings(relu_problem):
    prop = await OfflineProposer().propose(_request(relu_problem, moves=["fuse_chain"], direction="operator_fusion"))
    defaults = plan_space(plan_problem(relu_problem), Backend.TRITON).defaults()
    assert prop.kind is ProposalOutcome.CANDIDATE and prop.template == "fuse_chain"
    assert parse_settings(prop.code) == defaults and parse_move(prop.code) == "fuse_chain"
    assert prop.strategy == "operator_fusion/s0"


async def test_a_move_changes_exactly_its_knobs_from_the_best(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    prop = await proposer.propose(_request(relu_problem, moves=["vector_width"], direction="vectorization",
                                           best_code=best, step=2))
    before, after = parse_settings(best), parse_settings(prop.code)
    assert after.changed(before) == {Knob.EW_VEC: 4}
    assert "tl.multiple_of" in prop.code and "ew.vec: 1 -> 4" in prop.prompt


async def test_samples_of_a_step_autotune_one_move_nearest_values_first(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    start = parse_settings(best)[Knob.EW_BLOCK]
    blocks = []
    for sample in range(4):
        prop = await proposer.propose(_request(relu_problem, moves=["block_size"], best_code=best, step=2,
                                               sample=sample))
        blocks.append(parse_settings(prop.code)[Knob.EW_BLOCK])
    assert blocks == [start * 2, start // 2, start * 4, start // 4]


async def test_never_proposes_what_the_session_already_has(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    first = await proposer.propose(_request(relu_problem, moves=["block_size"], best_code=best, step=2,
                                            proposed=(best,)))
    again = await proposer.propose(_request(relu_problem, moves=["block_size"], best_code=best, step=3,
                                            proposed=(best, first.code)))
    assert parse_settings(again.code) != parse_settings(first.code)
    assert again.code not in (best, first.code)


async def test_without_the_sessions_list_it_remembers_what_it_wrote(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    codes = [(await proposer.propose(_request(relu_problem, moves=["block_size"], best_code=best, step=s))).code
             for s in (2, 3, 4)]
    assert len({parse_settings(c).key() for c in codes}) == 3


async def test_a_move_with_nothing_left_says_so(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    vec = (await proposer.propose(_request(relu_problem, moves=["vector_width"], best_code=best, step=2))).code
    done = await proposer.propose(_request(relu_problem, moves=["vector_width"], best_code=best, step=3,
                                           proposed=(best, vec)))
    assert done.code is None and done.kind is ProposalOutcome.EXHAUSTED
    assert "vector_width" in done.failure and "nothing left" in done.failure


async def test_a_move_already_at_its_target_is_exhausted_not_no_move(relu_problem):
    proposer = OfflineProposer()
    vec = (await proposer.propose(_request(relu_problem, moves=["vector_width"]))).code
    again = await proposer.propose(_request(relu_problem, moves=["vector_width"], best_code=vec, step=2,
                                            proposed=(vec,)))
    assert again.kind is ProposalOutcome.EXHAUSTED


async def test_a_move_that_does_not_touch_the_problem_is_no_move(relu_problem):
    # an elementwise problem has no rows to split and no GEMM to tile
    prop = await OfflineProposer().propose(_request(relu_problem, moves=["split_combine", "gemm_tiles"],
                                                    direction="reduction_strategy"))
    assert prop.code is None and prop.kind is ProposalOutcome.NO_MOVE
    assert "split_combine" in prop.failure


async def test_the_next_ranked_move_takes_over_when_the_first_is_spent(relu_problem):
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    vec = (await proposer.propose(_request(relu_problem, moves=["vector_width"], best_code=best, step=2))).code
    prop = await proposer.propose(_request(relu_problem, moves=["vector_width", "persistent_grid"], best_code=best,
                                           step=3, proposed=(best, vec)))
    assert prop.template == "persistent_grid" and parse_settings(prop.code)[Knob.EW_GRID] == "persistent"


async def test_every_backend_writes_the_move(relu_problem):
    proposer = OfflineProposer()
    codes = {}
    for backend in ("triton", "cuda", "cpp"):
        prop = await proposer.propose(_request(relu_problem, backend, ["persistent_grid"]))
        codes[backend] = prop.code
    assert "gridDim.x" in codes["cuda"] and "c += workers" in codes["cpp"] and "nprog" in codes["triton"]


async def test_streaming_and_no_usage(relu_problem):
    seen: list[str] = []

    async def sink(chunk: str) -> None:
        seen.append(chunk)

    prop = await OfflineProposer().propose(_request(relu_problem, "cpp", ["fuse_chain"]), on_token=sink)
    assert "".join(seen) == prop.code and prop.model == "offline" and prop.usage.prompt_tokens == 0


async def test_unsupported_problem_fails_with_a_reason(tmp_path):
    p = write_problem(tmp_path, "sort", """
        class Model(nn.Module):
            def forward(self, x):
                return torch.sort(x, dim=1)[0]
        """, "[torch.randn(4, 8)]")
    prop = await OfflineProposer().propose(_request(p, "cuda", ["fuse_chain"]))
    assert prop.code is None and prop.kind is ProposalOutcome.UNSUPPORTED
    assert prop.failure == "offline proposer: cannot generate a kernel for torch.sort"


async def test_reflect_turns_outcomes_into_lessons_under_the_moves_direction(relu_problem):
    proposer = OfflineProposer()
    req = _request(relu_problem, "cuda", ["vector_width"], direction="vectorization")
    prop = await proposer.propose(req)
    fast = EvalResult(status=Status.OK, correct=True, speedup_eager=1.8)
    lesson = await proposer.reflect(req, prop.code, fast)
    assert lesson is not None and lesson.direction == "vectorization" and "1.80x" in lesson.description
    assert "ew.vec=4" in lesson.description
    broken = EvalResult.failure(Status.COMPILE_ERROR, "nvcc: error in line 3")
    lesson = await proposer.reflect(req, prop.code, broken)
    assert lesson is not None and "nvcc" in lesson.pitfalls
    even = EvalResult(status=Status.OK, correct=True, speedup_eager=1.0)
    assert await proposer.reflect(req, prop.code, even) is None
    assert await proposer.reflect(req, "class ModelNew: pass", fast) is None


async def test_strategies_naming_a_replaced_template_still_reach_its_move(relu_problem):
    prop = await OfflineProposer().propose(_request(relu_problem, moves=["ew_fused_vec4"], direction="vectorization"))
    assert prop.template == "vector_width" and parse_settings(prop.code)[Knob.EW_VEC] == 4


async def test_it_names_ahead_the_directions_with_a_move_left(relu_problem):
    """What propose would answer, asked before the step: no NO_MOVE and no EXHAUSTED direction passes."""
    proposer = OfflineProposer()
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    vec = (await proposer.propose(_request(relu_problem, moves=["vector_width"], best_code=best, step=2))).code
    moves = {"vectorization": ["vector_width"], "reduction_strategy": ["split_combine", "gemm_tiles"],
             "parallel_mapping": ["block_size"]}
    query = _query(relu_problem, moves, best_code=best, proposed=(best, vec))
    assert (await proposer.movable(query)).directions == {"parallel_mapping"}
    for direction in moves:  # the same answers propose gives in a step of each direction
        prop = await proposer.propose(_request(relu_problem, moves=moves[direction], direction=direction,
                                               best_code=best, step=3, proposed=(best, vec)))
        assert (prop.kind is ProposalOutcome.CANDIDATE) == (direction == "parallel_mapping"), direction
    fresh = await proposer.movable(_query(relu_problem, moves, best_code=best, proposed=(best,)))
    assert fresh.directions == {"vectorization", "parallel_mapping"}  # vector_width has its move until it is evaluated


async def test_its_answer_ahead_is_what_every_seed_direction_answers_in_a_step(relu_problem):
    """Over the seed memory's own strategies, after a few evaluated candidates: a direction is named
    movable exactly when its step writes a candidate (new settings that write old code included)."""
    from htam_engine.memory import HTG
    from htam_engine.memory.retrieve import retrieve

    htg, proposer = HTG.seed(), OfflineProposer()
    state = State("slower", relu_problem.family, Bottleneck.MEMORY, "0.5-1", Backend.TRITON)
    retrievals = {g: retrieve(htg, g, state, k=None) for g in htg.directions()}
    best = (await proposer.propose(_request(relu_problem, moves=["fuse_chain"]))).code
    proposed = [best]
    for move in ("vector_width", "block_size", "persistent_grid"):
        proposed.append((await proposer.propose(_request(relu_problem, moves=[move], best_code=best, step=2,
                                                         proposed=tuple(proposed)))).code)
    movable = await proposer.movable(MoveQuery(relu_problem, Backend.TRITON, best, tuple(proposed), retrievals))
    outcomes = {}
    for g, retrieval in retrievals.items():
        request = ProposalRequest(problem=relu_problem, backend=Backend.TRITON, state=state,
                                  selection=Selection(g, [], "argmax"), retrieval=retrieval, best_code=best,
                                  step=3, proposed=tuple(proposed))
        outcomes[g] = (await proposer.propose(request)).kind
    assert movable.directions == {g for g, kind in outcomes.items() if kind is ProposalOutcome.CANDIDATE}
    assert movable.directions and set(outcomes) - movable.directions  # both answers occur
    # and it names the strategy each movable direction's step applies (selection scores its record)
    assert set(movable.applies) == movable.directions
    for g, sid in movable.applies.items():
        request = ProposalRequest(problem=relu_problem, backend=Backend.TRITON, state=state,
                                  selection=Selection(g, [], "argmax"), retrieval=retrievals[g], best_code=best,
                                  step=3, proposed=tuple(proposed))
        assert (await proposer.propose(request)).strategy == sid, g
