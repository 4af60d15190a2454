"""`htam batch`: a small suite end to end, interrupted and resumed, numbers recomputed from the
session files; `htam compare` on its results."""

from __future__ import annotations

import csv
import json
import signal
import time

import pytest
from cli_support import QUICK, htam_child

from htam_engine.loop.metrics import rows_from_sessions, suite_metrics


def test_batch_completes_after_an_interruption_and_its_numbers_follow_from_the_sessions(tmp_path, monkeypatch, capsys):
    from htam_engine.cli import main

    suite = tmp_path / "suite.txt"
    suite.write_text("# a list file\nbuiltin:relu\n\nbuiltin:softmax\nbuiltin:affine_gelu_scale\n")
    out = tmp_path / "out"
    env = {"HTAM_CONFIG": str(tmp_path / "none.toml"), "HTAM_SESSIONS_DIR": str(tmp_path / "sessions")}
    args = ["batch", str(suite), "--steps", "1", "--out", str(out), "--proposer", "offline", "--backend", "triton",
            "--set", "batch_size=4", *QUICK]
    proc = htam_child(args, env)
    ledger = out / "batch.json"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if ledger.exists() and json.loads(ledger.read_text())["done"]:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert 1 <= len(json.loads(ledger.read_text())["done"]) < 3

    for k, v in env.items():  # the resumed runs go in-process
        monkeypatch.setenv(k, v)
    assert main([*args, "--json"]) == 0
    stdout, err = capsys.readouterr()
    assert "(already done)" in err
    doc = json.loads(stdout)
    assert [r["problem"] for r in doc["rows"]] == ["builtin:relu", "builtin:softmax", "builtin:affine_gelu_scale"]
    assert doc["unfinished"] == [] and all(r["steps"] == 1 for r in doc["rows"])
    m = doc["metrics"]
    assert m["problems"] == 3 and m["correct"] >= 1  # the offline proposer's Triton kernels pass the harness
    assert m["fast_p_eager"]["fast_0"] == pytest.approx(m["correct"] / 3)

    # recomputed from the session files alone
    sessions = sorted((out / "sessions").glob("*.htam"))
    assert len(sessions) == 3
    rows = rows_from_sessions(sessions)
    by_id = {r["problem"]: r for r in rows}
    for r in doc["rows"]:
        mine = dict(by_id[r["problem"]])
        mine["session"] = r["session"]
        assert mine == r
    assert suite_metrics([by_id[r["problem"]] for r in doc["rows"]]) == m  # same order, same sums
    assert json.loads((out / "results.json").read_text())["metrics"] == m
    with open(out / "results.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 3
    report = (out / "report.md").read_text()
    assert "fast_1.5 vs torch.compile" in report and "builtin:softmax" in report

    # a third run has nothing left to do
    assert main(args) == 0
    assert capsys.readouterr().err.count("(already done)") == 3


def test_compare_puts_results_side_by_side(tmp_path, capsys):
    from htam_engine.cli import main

    base = {"problems": 2, "correct": 1, "correctness_rate": 0.5,
            "fast_p_eager": {"fast_0": 0.5, "fast_1": 0.5, "fast_1.5": 0.0, "fast_2": 0.0},
            "fast_p_compile": {"fast_0": 0.5, "fast_1": 0.0, "fast_1.5": 0.0, "fast_2": 0.0},
            "geomean_speedup_eager": 1.2, "geomean_speedup_compile": 0.9, "geomean_correct_eager": 1.44,
            "per_level": {"1": {"problems": 2, "correctness_rate": 0.5, "fast_1_eager": 0.5,
                                "geomean_speedup_eager": 1.2}},
            "tokens_per_problem": 10.0, "cost_per_problem_usd": 0.0, "wall_s": 3.0}
    for name, ablation, g in (("full", None, 1.2), ("flat", "flat", 1.05)):
        d = tmp_path / name
        d.mkdir()
        (d / "results.json").write_text(json.dumps({"settings": {"ablation": ablation},
                                                    "metrics": {**base, "geomean_speedup_eager": g}, "rows": []}))
    assert main(["compare", str(tmp_path / "full"), str(tmp_path / "flat" / "results.json"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["columns"] == ["full", "flat (flat)"]
    row = next(r for r in doc["rows"] if r["metric"].startswith("geomean speedup vs eager (failures"))
    assert row["values"] == ["1.200x", "1.050x"]
    assert main(["compare", str(tmp_path / "full"), str(tmp_path / "flat")]) == 0
    assert "flat (flat)" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "missing")]) == 2
