"""The sandbox trace (HTAM_SANDBOX_TRACE): each call's own phases, which trace_overhead.py sums into
the untimed work the judge's clock rule charges beyond a reported trial."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness_core_support import TRITON_CHAIN, fast_config

from htam_engine.evaluate.evaluator import Evaluator
from htam_engine.evaluate.result import Status
from htam_engine.settings import SANDBOX_TRACE_ENV

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from trace_overhead import summarize  # noqa: E402

OWN_PHASES = ("seed", "poison_queued", "poison", "before_forward", "forward_host", "trial", "deliver", "decoy", "reused", "verify")


def test_every_call_of_both_sandboxes_traces_its_own_phases(small_problem, tmp_path, monkeypatch):
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv(SANDBOX_TRACE_ENV, str(trace))
    ev = Evaluator("cpu")  # a fresh judge: its sandboxes read the variable when they start
    try:
        r = ev.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=10))
    finally:
        ev.close()
    assert r.status is Status.OK
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    roles = {(row["role"], row["model"]) for row in rows}
    assert {("candidate", "main"), ("reference", "eager")} <= roles
    for row in rows:
        assert row["calls_in_go"] >= 1 and 0 <= row["index_in_go"] < row["calls_in_go"]
        assert all(ms >= 0 for ms in row["phases_ms"].values())
    # the work check's calls say so (their switch does work of its own), so a summary can leave them out
    assert {row["kernels"] for row in rows if row["role"] == "reference"} == {"run"}
    assert {"run", "skip", "garbage"} <= {row["kernels"] for row in rows if row["role"] == "candidate"}
    # a call that raised (the work check's calls with kernels made to raise) ends after its forward
    # began; every call that returned traces each phase of its own work
    returned = [row for row in rows if "verify" in row["phases_ms"]]
    assert len(returned) >= len(rows) * 0.8
    for row in returned:
        assert set(OWN_PHASES) <= set(row["phases_ms"]), row
    timed = [row for row in rows if row["role"] == "candidate" and row["calls_in_go"] > 1]
    assert timed, "the timed runs' calls go back to back, several to a Go"
    table = summarize(rows, skip=2)
    for key in (("candidate", "main"), ("reference", "eager")):
        med = table[key]
        # the call's own work holds its timed window: what is left is the harness's, never negative
        assert med["own"] >= med["reported"] and med["untimed"] > 0
        assert med["forward_host"] <= med["reported"] * 1.5 + 0.05
