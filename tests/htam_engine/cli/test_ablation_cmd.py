"""`--ablation random` on `htam run` and `htam batch`: accepted, applied and recorded."""

from __future__ import annotations

import json

import pytest
from cli_support import NO_KERNEL, PROBLEM, QUICK, fenced, model_env, one_json

from htam_engine.memory import HTG
from htam_engine.memory.select import applicable_directions
from htam_engine.session import load_session
from tests.support.loopback_server import LoopbackServer, Reply


@pytest.fixture
def env(tmp_path, monkeypatch):
    # every reply is a module without a kernel: rejected statically, nothing is compiled
    with LoopbackServer(default=Reply(fenced(NO_KERNEL)), model="loopback-model") as srv:
        for k, v in model_env(srv, tmp_path).items():
            monkeypatch.setenv(k, v)
        yield srv


def test_run_with_the_random_arm_records_it_in_the_session_and_its_summary(env, tmp_path, capsys):
    from htam_engine.cli import main

    session = tmp_path / "random.htam"
    assert main(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "4", "--seed", "3",
                 "--ablation", "random", "--session", str(session), "--no-bank", "--json", *QUICK]) == 0
    doc = one_json(capsys.readouterr().out)
    assert doc["config"]["ablation"] == "random"
    assert [s["selection_mode"] for s in doc["steps"]] == ["random"] * 4
    saved = load_session(session)
    assert saved.config.ablation == "random"
    for rec in saved.steps:  # each draw came from the directions that applied in its state
        assert rec.selection.direction in applicable_directions(HTG.seed(), rec.state)


def test_batch_with_the_random_arm_records_it_in_the_results(env, tmp_path, capsys):
    from htam_engine.cli import main

    out = tmp_path / "out"
    assert main(["batch", "builtin:relu", "builtin:softmax", "--proposer", "model", "--backend", "triton",
                 "--steps", "2", "--ablation", "random", "--out", str(out), "--json", *QUICK]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["ablation"] == "random"
    assert json.loads((out / "results.json").read_text())["settings"]["ablation"] == "random"
    sessions = sorted((out / "sessions").glob("*.htam"))
    assert len(sessions) == 2
    for path in sessions:
        s = load_session(path)
        assert s.config.ablation == "random" and {r.selection.mode for r in s.steps} == {"random"}


def test_an_unknown_arm_is_bad_usage(env, capsys):
    from htam_engine.cli import main

    assert main(["run", str(PROBLEM), "--ablation", "sideways"]) == 2
    err = capsys.readouterr().err
    assert "sideways" in err and "Traceback" not in err


def test_compare_prints_an_experiments_ablation_table(tmp_path, capsys):
    import asyncio

    from htam_engine.cli import main
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.experiment import Arm, EvalTable, Experiment, ExperimentSpec, TablePool
    from tests.support.toy_search import ToyEvaluator, ToyProposer, toy_problem

    problems = {p.id: p for p in map(toy_problem, ("t0", "t1", "t2", "b0"))}
    spec = ExperimentSpec(test=["toy:t0", "toy:t1", "toy:t2"], bank=["toy:b0"], arms=[Arm.FULL, Arm.RANDOM],
                          seeds=[0])
    out = tmp_path / "exp"
    asyncio.run(Experiment(spec, out, pool=TablePool(EvalTable(None, {}), ToyEvaluator()), proposer=ToyProposer(),
                           eval_config=EvalConfig(device="cuda"), evaluator="the toy evaluator").run(problems))
    assert main(["compare", str(out)]) == 0
    text = capsys.readouterr().out
    assert "cold: every run starts from the seed memory" in text and "memory transfer" in text
    assert "steps to 95 %" in text and "random" in text and "Mode: measured by the toy evaluator" in text
    assert main(["compare", str(out / "experiment.json"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)[0]
    assert [r["arm"] for r in doc["summary"]["rows"]] == ["full", "random", "full", "random"]
    assert doc["spec"]["test"] == spec.test and doc["tables"][0]["columns"][0] == "arm"
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "results.json").write_text(json.dumps({"settings": {}, "metrics": {}, "rows": []}))
    assert main(["compare", str(out), str(batch)]) == 2
    assert "not both" in capsys.readouterr().err
