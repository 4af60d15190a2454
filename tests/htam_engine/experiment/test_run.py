"""The whole experiment on the toy search, where the answer is known (tests/support/toy_search.py):
the warm full method must walk the chain in len(CHAIN) steps and beat random, cold and warm."""

from __future__ import annotations

import asyncio
import json

import pytest

from htam_engine.cli import main
from htam_engine.errors import UsageError
from htam_engine.evaluate.config import EvalConfig
from htam_engine.experiment import Arm, EvalTable, Experiment, ExperimentSpec, Start, TablePool, load_outcome
from htam_engine.experiment.report import render_markdown
from htam_engine.experiment.run import BANK, BANK_RUNS, RUNS
from htam_engine.experiment.plan import UNMEASURED
from htam_engine.experiment.stats import measured_only, summarize
from tests.support.toy_search import CHAIN, GAIN, ToyEvaluator, ToyProposer, toy_problem

TEST = [toy_problem(f"t{i}") for i in range(6)]
BANK_PROBLEMS = [toy_problem(f"b{i}") for i in range(4)]
PROBLEMS = {p.id: p for p in TEST + BANK_PROBLEMS}
CFG = EvalConfig(device="cuda", backend="triton")


def spec(**kw) -> ExperimentSpec:
    args = dict(test=[p.id for p in TEST], bank=[p.id for p in BANK_PROBLEMS], seeds=[0, 1],
                arms=[Arm.FULL, Arm.RANDOM, Arm.NO_UPDATE])
    return ExperimentSpec(**{**args, **kw})


def experiment(out, table_path=None, inner=None, **kw) -> Experiment:
    table = EvalTable(table_path, {"toy": 1}) if inner is not None or table_path is None else EvalTable(table_path)
    pool = TablePool(table, inner if inner is not None else (ToyEvaluator() if table_path is None else None))
    return Experiment(kw.pop("spec", None) or spec(), out, pool=pool, proposer=ToyProposer(), eval_config=CFG,
                      evaluator="the toy evaluator (test double)", **kw)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("toy")
    inner = ToyEvaluator()
    outcome = asyncio.run(experiment(out, out / "table.jsonl", inner).run(PROBLEMS))
    return out, outcome, inner


def table_text(outcome) -> str:
    return render_markdown(outcome)


def test_the_warm_full_method_walks_the_known_chain_and_every_arm_is_compared_with_it(measured):
    out, outcome, _ = measured
    s = summarize(outcome.spec, outcome.records, outcome.bank_records)
    why = "\n" + table_text(outcome)
    assert s.reference == {p.id: pytest.approx(GAIN ** len(CHAIN)) for p in TEST}, why
    rows = {(r.start, r.arm): r for r in s.rows}
    warm_full = rows[(Start.WARM, Arm.FULL)]
    assert (warm_full.steps_median.value, warm_full.steps_mean) == (len(CHAIN), len(CHAIN)), why
    for start in (Start.COLD, Start.WARM):
        vs = rows[(start, Arm.RANDOM)].vs_full
        assert vs.mean_delta.low > 0 and vs.p_value < 0.05, f"{start.value}: full is not faster than random{why}"
    assert s.transfer[Arm.FULL].mean_delta.value > 0, f"the warm bank did not help the full method{why}"
    assert s.transfer[Arm.RANDOM].mean_delta.value == 0  # random ignores memory
    assert len(outcome.records) == outcome.meta["planned_runs"] == 6 * 2 * 3 * 2
    assert len(outcome.bank_records) == 4 and (out / BANK).exists()


def test_each_distinct_candidate_was_evaluated_once(measured):
    out, outcome, inner = measured
    c = outcome.meta["table_counts"]
    assert len(inner.evaluated) == len(set(inner.evaluated)) == c["evaluated"] == outcome.meta["table_size"]
    assert c["requests"] == c["evaluated"] + c["hits"] + c["joined"]
    assert c["requests"] == sum(len(r.steps) for r in [*outcome.records, *outcome.bank_records])
    s = summarize(outcome.spec, outcome.records, outcome.bank_records)
    # the toy problems share one source text, so the table keys them apart by problem id
    assert s.distinct_candidates == c["evaluated"]


def test_the_report_says_how_it_was_produced_and_lists_both_problem_sets(measured):
    _, outcome, _ = measured
    text = table_text(outcome)
    assert "Mode: measured by the toy evaluator (test double)" in text
    assert "Test problems (6): toy:t0" in text and "Bank problems (4, disjoint from the test problems): toy:b0" in text
    assert "**cold: every run starts from the seed memory**" in text and "memory transfer" in text
    header = next(line for line in text.splitlines() if line.startswith("| arm | runs"))
    for col in ("correct", "steps to 95 %, median [95 % CI]", "best@3 geomean", "best@6 geomean",
                "Δ steps vs full, mean [95 % CI]"):
        assert col in header


def test_a_rerun_into_the_same_folder_runs_nothing_again_and_another_spec_is_refused(measured):
    out, outcome, _ = measured
    inner = ToyEvaluator()
    again = asyncio.run(experiment(out, out / "table.jsonl", inner).run(PROBLEMS))
    assert inner.evaluated == [] and len(again.records) == len(outcome.records)
    assert again.meta["table_counts"]["requests"] == 0
    with pytest.raises(UsageError, match="another spec"):
        asyncio.run(experiment(out, spec=spec(seeds=[0])).run(PROBLEMS))


def test_replaying_the_table_gives_the_same_searches_without_evaluating(measured, tmp_path):
    out, outcome, _ = measured
    replay = asyncio.run(experiment(tmp_path / "replay", out / "table.jsonl").run(PROBLEMS))
    assert replay.meta["mode"] == "replayed" and replay.meta["table_counts"]["missing"] == 0
    key = lambda r: (r.key.text(), [(s.direction, s.code_hash, s.best) for s in r.steps])  # noqa: E731
    assert sorted(map(key, replay.records)) == sorted(map(key, outcome.records))
    assert "Mode: replayed from the evaluation table" in table_text(replay)


def test_a_replay_missing_candidates_marks_their_steps_and_shows_the_measured_pairs_apart(measured, tmp_path, capsys):
    out, outcome, _ = measured
    lines = (out / "table.jsonl").read_text().splitlines()
    thinned = tmp_path / "thinned.jsonl"
    thinned.write_text("\n".join(lines[:1] + lines[1::2]) + "\n")  # the header kept, half the evaluations gone
    replay = asyncio.run(experiment(tmp_path / "replay", thinned).run(PROBLEMS))
    unmeasured = [s for r in replay.records for s in r.steps if s.status == UNMEASURED]
    assert unmeasured and replay.meta["table_counts"]["missing"] >= len(unmeasured)
    kept, pairs, of = measured_only(replay.records)
    touched = {(r.key.problem, r.key.seed) for r in replay.records if any(s.status == UNMEASURED for s in r.steps)}
    assert of == len({(r.key.problem, r.key.seed) for r in replay.records}) and pairs == of - len(touched)
    assert all((r.key.problem, r.key.seed) not in touched for r in kept)
    text = table_text(replay)
    assert "Steps that asked for a candidate the table lacks" in text
    assert f"the {pairs} of {of} (problem, seed) pairs" in text
    assert "The same on measured candidates only" not in table_text(outcome)  # nothing missing, nothing apart
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "replay")]) == 0  # the terminal table says the same
    assert f"the {pairs} of {of} (problem, seed) pairs" in capsys.readouterr().out


def test_a_deadline_stops_the_experiment_and_the_report_says_what_finished(tmp_path):
    stuck = {p.id for p in TEST[3:]}

    class Hangs(ToyEvaluator):
        """Never answers for half the test problems (a hung GPU, say)."""

        async def evaluate(self, problem, code, config=None, on_progress=None):
            if problem.id in stuck:
                await asyncio.Event().wait()
            return await super().evaluate(problem, code, config, on_progress)

    outcome = asyncio.run(experiment(tmp_path, inner=Hangs(), concurrency=100).run(PROBLEMS, deadline_s=3.0))
    assert outcome.meta["deadline_hit"]
    assert {r.key.problem for r in outcome.records} == {p.id for p in TEST[:3]}
    assert len(outcome.records) == 3 * 3 * 2 * 2  # problems x arms x seeds x starts, all whole runs
    assert all(len(r.steps) == 6 for r in outcome.records)
    assert "deadline stopped the rest" in table_text(outcome)
    lines = (tmp_path / RUNS).read_text().splitlines()
    assert len(lines) == len(outcome.records) and all(json.loads(x)["key"] for x in lines)
    assert load_outcome(tmp_path).meta["deadline_hit"]


def test_overlapping_problem_sets_and_missing_problems_are_refused(tmp_path):
    with pytest.raises(UsageError, match="overlap"):
        spec(bank=[TEST[0].id]).check()
    with pytest.raises(UsageError, match="full method"):
        spec(arms=[Arm.RANDOM]).check()
    with pytest.raises(UsageError, match="not loaded"):
        asyncio.run(experiment(tmp_path).run({p.id: p for p in TEST}))
    assert not (tmp_path / BANK_RUNS).exists()


def test_the_warm_bank_can_be_learned_by_another_arm_over_several_seeds(tmp_path):
    exploring = spec(arms=[Arm.FULL], seeds=[0], bank_arm=Arm.RANDOM, bank_seeds=2)
    outcome = asyncio.run(experiment(tmp_path, spec=exploring).run(PROBLEMS))
    learned = sorted((r.key.problem, r.key.arm, r.key.seed) for r in outcome.bank_records)
    assert learned == sorted((p.id, Arm.RANDOM, s) for p in BANK_PROBLEMS for s in (0, 1))
    assert "2 random session(s) each" in table_text(outcome)
    assert load_outcome(tmp_path).spec.bank_arm is Arm.RANDOM  # what a rerun compares its spec with
