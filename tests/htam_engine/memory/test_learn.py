"""Memory update: reward, edge and strategy statistics, veto notes, lessons, replayable deltas."""

import math
import random

import pytest

from htam_engine.evaluate.result import Status
from htam_engine.memory import HTG, START, HistoryEntry, apply_delta, compute_reward, make_state, record_lesson, update
from htam_engine.memory.learn import PENALTIES

S = make_state("ok", "elementwise", "cuda", "memory", 1.2)
FUSE = "operator_fusion/fuse_the_whole_elementwise_chain"


def test_reward_is_log_speedup_change_with_penalties_for_failures():
    assert compute_reward(1.2, 2.4, "ok") == pytest.approx(math.log(2))
    assert compute_reward(None, 1.5, Status.OK) == pytest.approx(math.log(1.5))  # against eager
    assert compute_reward(2.0, 1.6, "ok") == pytest.approx(math.log(0.8))
    assert compute_reward(1.0, 1e9, "ok") == 2.0  # clamped
    slow_but_correct = compute_reward(None, 0.04, "ok")
    for status in ("compile_error", "runtime_error", "incorrect", "timeout", "rejected", "vetoed"):
        assert compute_reward(1.0, None, status) == PENALTIES[status] < slow_but_correct < 0
    assert compute_reward(1.0, None, "ok") < 0


def _step(h, history, **kw):
    args = dict(history=history, state=S, direction="vectorization", strategies=[FUSE], status="ok",
                prev_speedup=1.2, new_speedup=1.8, family="elementwise", backend="cuda", session_id="s", step=1,
                now=100.0)
    args.update(kw)
    return update(h, **args)


def test_update_records_the_transition_and_the_strategies():
    h = HTG.seed()
    delta = _step(h, [HistoryEntry(S, "operator_fusion")])
    e = h.edge("operator_fusion", "vectorization")
    r = math.log(1.8 / 1.2)
    assert e["stats"][S.key()] == [1, 1, pytest.approx(r), pytest.approx(r * r)]
    a = h.strategy_attrs(FUSE)
    assert (a["tries"], a["successes"], a["ctx"]["elementwise|cuda"][0], a["last_used"]) == (1, 1, 1, 100.0)
    assert h.uses(FUSE) == [("s", 1, pytest.approx(r))]
    assert delta["reward"] == pytest.approx(r)
    assert any(n["source"] == "learned" for n in e["notes"])  # a notable gain leaves a note
    first = _step(HTG.seed(), [])["transitions"][0]
    assert first[:2] == [START, "vectorization"]


def test_a_veto_is_a_failure_whose_reason_becomes_a_note():
    h = HTG.seed()
    d = _step(h, [HistoryEntry(S, "operator_fusion")], status="vetoed", new_speedup=None,
              veto_reason="float4 on unaligned views is unsafe")
    assert d["reward"] == PENALTIES["vetoed"] and d["status"] == "vetoed"
    notes = h.notes("operator_fusion", "vectorization")
    assert notes[-1].source == "veto" and notes[-1].why == "float4 on unaligned views is unsafe"
    assert h.strategy_attrs(FUSE)["successes"] == 0


def test_no_update_ablation_leaves_memory_untouched():
    h = HTG.seed()
    d = _step(h, [], ablation="no-update")
    assert h == HTG.seed() and d["ablation"] == "no-update" and d["transitions"] == []


def test_lessons_become_strategies_and_duplicates_are_merged():
    h = HTG.seed()
    delta = _step(h, [])
    sid = record_lesson(h, delta, direction="vectorization", title="Use float4 for bias add",
                        description="Load bias and input with float4 when the row length is a multiple of four")
    assert h.strategy(sid).title == "Use float4 for bias add" and len(delta["added"]) == 1
    again = record_lesson(h, delta, direction="vectorization", title="use FLOAT4 for bias-add!",
                          description="something else")
    near = record_lesson(h, delta, direction="vectorization", title="Another title",
                         description="Load bias and input with float4 when the row length is a multiple of four.")
    assert again == sid and near == sid and len(delta["added"]) == 1


def test_replaying_deltas_over_a_snapshot_gives_the_live_memory():
    live = HTG.seed()
    snapshot = live.to_data()
    rng, history, deltas = random.Random(4), [], []
    for step in range(1, 30):
        state = make_state(rng.choice(["ok", "compile_error", "incorrect"]), "elementwise", "cuda", "memory",
                           rng.uniform(0.5, 2.5))
        d = rng.choice(live.directions())
        delta = update(live, history=history, state=state, direction=d, strategies=live.strategy_ids(d)[:2],
                       status=rng.choice(["ok", "incorrect", "vetoed"]), prev_speedup=1.0,
                       new_speedup=rng.uniform(0.5, 3), family="elementwise", backend="cuda", session_id="x",
                       step=step, veto_reason="no" if step % 7 == 0 else None)
        if step % 5 == 0:
            record_lesson(live, delta, direction=d, title=f"lesson {step}", description=f"do thing {step} well")
        deltas.append(delta)
        history.append(HistoryEntry(state, d))
    replay = HTG.from_data(snapshot)
    for delta in deltas:
        apply_delta(replay, delta)
    assert replay == live
