"""The engine's history for selection and learning is the best candidate's lineage (toy doubles)."""

from __future__ import annotations

from htam_engine.evaluate.config import EvalConfig
from htam_engine.loop.engine import Engine
from htam_engine.memory import START
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
