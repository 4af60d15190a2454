"""Proposals from worker processes are the proposals the proposer writes in this process."""

from __future__ import annotations

from htam_engine.families import Backend
from htam_engine.memory import make_state
from htam_engine.memory.types import Retrieval, Selection, StrategyView
from htam_engine.problems import load_problem
from htam_engine.propose.base import KnowsMoves, MoveQuery, ProposalRequest
from htam_engine.experiment.parallel import ProcessProposer
from htam_engine.propose.offline import OfflineProposer


def request(template: str) -> ProposalRequest:
    problem = load_problem("builtin:relu")
    hint = StrategyView(id=f"t/{template}", direction="vectorization", title=template, description="",
                        template=template)
    return ProposalRequest(problem=problem, backend=Backend.TRITON,
                           state=make_state("start", problem.family, Backend.TRITON, "memory", None),
                           selection=Selection("vectorization", [], "argmax"),
                           retrieval=Retrieval("vectorization", [hint], []))


async def test_a_process_pool_writes_what_the_proposer_writes_here():
    remote = ProcessProposer(OfflineProposer, workers=1)
    try:
        for template in ("vector_width", "persistent_grid"):  # moves of the elementwise generator
            here = await OfflineProposer().propose(request(template))
            there = await remote.propose(request(template))
            assert there.code == here.code and there.template == template
        assert remote.name == "offline"
    finally:
        remote.close()


class Writes:
    """A proposer that cannot tell its moves ahead (a model, say)."""

    name = "writes"


async def test_the_pool_knows_the_moves_exactly_when_its_proposer_does():
    remote = ProcessProposer(OfflineProposer, workers=1)
    plain = ProcessProposer(Writes, workers=1)
    try:
        assert isinstance(remote, KnowsMoves) and not isinstance(plain, KnowsMoves)
        asked = request("vector_width")
        query = MoveQuery(asked.problem, Backend.TRITON, None, (),
                          {"vectorization": asked.retrieval, "reduction_strategy": request("split_combine").retrieval})
        here = await OfflineProposer().movable(query)
        assert await remote.movable(query) == here and here.directions == {"vectorization"}
    finally:
        remote.close()
        plain.close()
