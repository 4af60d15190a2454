"""The evaluation table: one evaluation per distinct candidate, kept on disk, replayable."""

from __future__ import annotations

import asyncio
import json

import pytest

from htam_engine.errors import InputError
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import Status
from htam_engine.experiment import EvalTable, TableKey, TableMode, TablePool
from htam_engine.experiment.table import MISSING_MESSAGE
from htam_engine.problems.model import Problem
from tests.support.toy_search import HEAD, ToyEvaluator, speedup_of, toy_problem

CFG = EvalConfig(device="cuda", backend="triton")
SETTINGS = {"trials": 30}


def code(*path: str) -> str:
    return HEAD + ",".join(path) + "\n"


class SlowToy(ToyEvaluator):
    """The toy evaluator, taking a moment, so that requests overlap."""

    async def evaluate(self, problem, code, config=None, on_progress=None):
        await asyncio.sleep(0.05)
        return await super().evaluate(problem, code, config, on_progress)


async def test_a_candidate_is_evaluated_once_however_many_runs_ask_for_it(tmp_path):
    inner = SlowToy()
    pool = TablePool(EvalTable(tmp_path / "t.jsonl", SETTINGS), inner)
    p = toy_problem("a")
    same = await asyncio.gather(*(pool.evaluate(p, code("operator_fusion"), CFG) for _ in range(5)))
    later = await pool.evaluate(p, code("operator_fusion"), CFG)
    other = await pool.evaluate(p, code("vectorization"), CFG)
    assert inner.evaluated == [(p.id, code("operator_fusion")), (p.id, code("vectorization"))]
    assert {r.speedup_eager for r in [*same, later]} == {speedup_of(["operator_fusion"])}
    assert other.speedup_eager == speedup_of(["vectorization"])
    c = pool.counts
    assert (c.requests, c.evaluated, c.joined, c.hits, c.missing) == (7, 2, 4, 1, 0)
    same[0].speedup_eager = 99.0  # each reader gets its own copy
    assert (await pool.evaluate(p, code("operator_fusion"), CFG)).speedup_eager != 99.0


def test_the_key_tells_problems_overrides_backends_devices_and_sources_apart():
    p = toy_problem("a")
    base = TableKey.of(p, code("x"), CFG)
    variants = [
        TableKey.of(toy_problem("b"), code("x"), CFG),
        TableKey.of(Problem(id=p.id, name=p.name, source=p.source + "# edited\n"), code("x"), CFG),
        TableKey.of(Problem(id=p.id, name=p.name, source=p.source, overrides={"N": 8}), code("x"), CFG),
        TableKey.of(p, code("x"), EvalConfig(device="cuda", backend="cuda")),
        TableKey.of(p, code("x"), EvalConfig(device="cpu", backend="triton")),
        TableKey.of(p, code("y"), CFG),
    ]
    assert len({base.text(), *(k.text() for k in variants)}) == 7


async def test_the_table_survives_on_disk_and_a_torn_last_line_is_evaluated_again(tmp_path):
    path = tmp_path / "t.jsonl"
    pool = TablePool(EvalTable(path, SETTINGS), ToyEvaluator())
    p = toy_problem("a")
    for d in ("operator_fusion", "vectorization"):
        await pool.evaluate(p, code(d), CFG)
    with open(path, "a") as fh:
        fh.write('{"key": {"problem": "toy:a", "probl')  # a crash in the middle of a write
    again = EvalTable(path, SETTINGS)
    assert len(again) == 2 and again.devices() == {"cuda"}
    inner = ToyEvaluator()
    pool = TablePool(again, inner)
    await pool.evaluate(p, code("vectorization"), CFG)
    assert inner.evaluated == []


def test_a_table_measured_under_other_settings_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    EvalTable(path, SETTINGS)
    with pytest.raises(InputError, match="trials"):
        EvalTable(path, {"trials": 5})
    path.write_text("not a table\n")
    with pytest.raises(InputError, match="not an evaluation table"):
        EvalTable(path, SETTINGS)
    with pytest.raises(InputError, match="no evaluation table"):
        EvalTable(tmp_path / "missing.jsonl")  # replay needs a table


async def test_replay_answers_from_the_table_and_counts_what_is_missing(tmp_path):
    path = tmp_path / "t.jsonl"
    p = toy_problem("a")
    await TablePool(EvalTable(path, SETTINGS), ToyEvaluator()).evaluate(p, code("operator_fusion"), CFG)
    replay = TablePool(EvalTable(path))
    assert replay.mode is TableMode.REPLAYED
    hit = await replay.evaluate(p, code("operator_fusion"), CFG)
    miss = await replay.evaluate(p, code("memory_access"), CFG)
    assert hit.ok and hit.speedup_eager == speedup_of(["operator_fusion"])
    assert miss.status is Status.RUNTIME_ERROR and miss.diagnostics.message == MISSING_MESSAGE
    assert (replay.counts.hits, replay.counts.missing) == (1, 1)
    assert json.loads(path.read_text().splitlines()[0])["settings"] == SETTINGS
