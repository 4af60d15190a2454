"""The memory learns from a proposal that brought no candidate, by what the proposer said."""

from __future__ import annotations

from htam_engine.families import ProposalOutcome
from htam_engine.loop.engine import Engine
from htam_engine.memory.learn import PENALTIES, proposal_status
from htam_engine.problems import load_problem
from htam_engine.propose.base import Proposal
from htam_engine.session.model import SessionConfig


class ExhaustedProposerDouble:
    """A test double for a proposer whose moves have nothing left to change (no model, no kernels)."""

    name = "offline"

    async def propose(self, request, on_token=None):
        return Proposal(code=None, failure="offline proposer: moves x have nothing left to change",
                        outcome=ProposalOutcome.EXHAUSTED)

    async def reflect(self, request, code, result):
        return None


def test_outcomes_map_to_statuses():
    assert proposal_status(ProposalOutcome.EXHAUSTED) == "exhausted" == proposal_status("exhausted")
    assert proposal_status("no_move") == "no_move"
    assert proposal_status(ProposalOutcome.UNSUPPORTED) == proposal_status(None) == "failed"
    assert PENALTIES["failed"] < PENALTIES["exhausted"] < 0  # a wasted step, not a broken kernel


async def test_an_exhausted_step_is_learned_as_exhausted(tmp_path):
    problem = load_problem("relu", {"batch_size": 2, "dim": 64})
    engine = Engine(problem, SessionConfig(backend="triton", steps=1), proposer=ExhaustedProposerDouble(), pool=None,
                    session_path=tmp_path / "s.htam")
    session = await engine.run()
    step = session.steps[0]
    assert step.candidates[0].outcome == "exhausted"
    assert step.memory_delta["status"] == "exhausted" and step.reward == PENALTIES["exhausted"]
