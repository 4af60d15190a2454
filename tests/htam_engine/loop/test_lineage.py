"""The engine's history for selection and learning is the best candidate's lineage (toy doubles)."""

from __future__ import annotations

from htam_engine.evaluate.config import EvalConfig
from htam_engine.loop import events as ev
from htam_engine.loop.engine import Engine
from htam_engine.families import ProposalOutcome
from htam_engine.memory import START
from htam_engine.propose.base import Moves, Proposal
from htam_engine.session import history_of
from htam_engine.session.model import SessionConfig
from tests.support.toy_search import ToyEvaluator, ToyProposer, toy_problem


async def toy_session(steps: int = 6, **config):
    engine = Engine(toy_problem("lineage"), SessionConfig(backend="triton", device="cuda", proposer="toy",
                                                          steps=steps, **config),
                    proposer=ToyProposer(), pool=ToyEvaluator(), eval_config=EvalConfig(device="cuda"))
    return await engine.run()


async def test_each_step_is_learned_as_a_move_from_the_one_that_made_the_best_it_was_tried_on():
    session = await toy_session()
    history = history_of(session)
    best, base = None, START
    for rec, entry in zip(session.steps, history):
        improved = rec.best_speedup is not None and (best is None or rec.best_speedup > best)
        assert entry.improved == improved
        src = rec.memory_delta["transitions"][0][0]
        assert src == base, f"step {rec.step} learned from {src}, but it was tried on the best {base} made"
        if improved:
            best, base = rec.best_speedup, rec.selection.direction
    assert any(not e.improved for e in history)  # the toy wastes some steps: the check above saw both kinds


async def test_a_move_that_did_not_improve_the_best_is_not_tried_again_on_it():
    session = await toy_session()
    tried_on_best: set[str] = set()
    for entry in history_of(session):
        assert entry.direction not in tried_on_best, f"{entry.direction} tried twice on one best"
        tried_on_best = set() if entry.improved else tried_on_best | {entry.direction}


async def test_the_random_arm_draws_a_different_sequence_on_each_problem():
    a = await toy_session(ablation="random", seed=1)
    engine = Engine(toy_problem("other"), SessionConfig(backend="triton", device="cuda", proposer="toy", steps=6,
                                                        ablation="random", seed=1),
                    proposer=ToyProposer(), pool=ToyEvaluator(), eval_config=EvalConfig(device="cuda"))
    b = await engine.run()
    again = await toy_session(ablation="random", seed=1)
    dirs = [[r.selection.direction for r in s.steps] for s in (a, b, again)]
    assert dirs[0] == dirs[2] and dirs[0] != dirs[1]


class NoMoveFor(ToyProposer):
    """The toy proposer, except that every direction in `none` has no move for the problem."""

    def __init__(self, none: set[str]):
        self.none = none

    async def propose(self, request, on_token=None) -> Proposal:
        if request.selection.direction in self.none:
            return Proposal(code=None, failure="no move", model=self.name, outcome=ProposalOutcome.NO_MOVE)
        return await super().propose(request, on_token)


async def test_a_step_whose_proposer_had_no_move_reaches_the_selector_as_one():
    """What bars the direction for the rest of the session (test_select covers the bar itself)."""
    first = (await toy_session(steps=1)).steps[0].selection.direction
    engine = Engine(toy_problem("lineage"), SessionConfig(backend="triton", device="cuda", proposer="toy", steps=3),
                    proposer=NoMoveFor({first}), pool=ToyEvaluator(), eval_config=EvalConfig(device="cuda"))
    session = await engine.run()
    history = history_of(session)
    assert history[0].direction == first and history[0].no_move
    assert not any(e.no_move for e in history[1:]) and first not in [e.direction for e in history[1:]]


class KnowsNoMoveFor(NoMoveFor):
    """NoMoveFor that also says ahead which directions have a move (propose.base.KnowsMoves)."""

    async def movable(self, query) -> Moves:
        return Moves(frozenset(query.retrievals) - self.none)


async def test_a_proposer_that_knows_its_moves_spends_no_step_learning_a_direction_has_none():
    first = (await toy_session(steps=1)).steps[0].selection.direction
    engine = Engine(toy_problem("lineage"), SessionConfig(backend="triton", device="cuda", proposer="toy", steps=3),
                    proposer=KnowsNoMoveFor({first}), pool=ToyEvaluator(), eval_config=EvalConfig(device="cuda"))
    session = await engine.run()
    assert len(session.steps) == 3
    assert first not in [r.selection.direction for r in session.steps]
    assert not any(e.no_move for e in history_of(session))


class MovableFails(KnowsNoMoveFor):
    async def movable(self, query) -> Moves:
        raise RuntimeError("design space unreadable")


async def test_a_proposer_failing_to_say_its_moves_costs_an_error_line_not_the_step():
    engine = Engine(toy_problem("lineage"), SessionConfig(backend="triton", device="cuda", proposer="toy", steps=2),
                    proposer=MovableFails(set()), pool=ToyEvaluator(), eval_config=EvalConfig(device="cuda"))
    sub = engine.events()
    session = await engine.run()
    errors = [e async for e in sub if isinstance(e, ev.EngineError)]
    assert len(session.steps) == 2 and all(r.candidates for r in session.steps)
    assert errors and "design space unreadable" in errors[0].message


async def test_a_proposer_that_knows_its_moves_reads_every_ranked_strategy_and_a_model_the_top_few():
    from htam_engine.loop.engine import RETRIEVE_K

    for proposer, knows in ((KnowsNoMoveFor(set()), True), (NoMoveFor(set()), False)):
        engine = Engine(toy_problem("lineage"), SessionConfig(backend="triton", device="cuda", proposer="toy",
                                                              steps=2), proposer=proposer, pool=ToyEvaluator(),
                        eval_config=EvalConfig(device="cuda"))
        session = await engine.run()
        for r in session.steps:
            ranked = engine.htg.strategy_ids(r.selection.direction)
            want = len(ranked) if knows else min(RETRIEVE_K, len(ranked))
            assert len(r.retrieval.strategies) == want, (knows, r.selection.direction)
        assert not knows or any(len(engine.htg.strategy_ids(r.selection.direction)) > RETRIEVE_K
                                for r in session.steps)  # the case the difference shows in was met
