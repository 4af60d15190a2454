"""`htam eval`: one JSON document on stdout, exit 0 for any verdict, exit 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from harness_core_support import HERE, PROBLEM_PATH

from htam_engine.cli import main

TRITON = HERE / "candidates" / "triton_chain.py"


def test_json_output_is_one_result_document():
    proc = subprocess.run(
        [sys.executable, "-m", "htam_engine", "eval", str(PROBLEM_PATH), str(TRITON), "--set", "N=8192",
         "--trials", "4", "--no-compile-baseline", "--timeout", "120", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["status"] == "ok" and doc["correct"] is True
    assert doc["backend"] == "triton" and doc["device"] == "cpu" and len(doc["timings"]) == 4
    for key in ("runtime_ms", "ref_runtime_ms", "compile_ref_runtime_ms", "speedup_eager", "speedup_compile",
                "diagnostics", "integrity", "stages"):
        assert key in doc
    assert "compile" in proc.stderr  # progress goes to stderr, not into the JSON


def test_incorrect_candidate_still_exits_zero(tmp_path, capsys):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(TRITON.read_text().replace("* 0.5, mask=mask)", "* 0.75, mask=mask)"))
    code = main(["eval", str(PROBLEM_PATH), str(wrong), "--set", "N=8192", "--trials", "3",
                 "--no-compile-baseline", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["status"] == "incorrect"


@pytest.mark.parametrize("argv, needle", [
    (["eval", str(PROBLEM_PATH), "/no/such/candidate.py"], "/no/such/candidate.py"),
    (["eval", "/no/such/problem.py", str(TRITON)], "problem.py"),
    (["eval", str(PROBLEM_PATH), str(TRITON), "--set", "not an assignment"], "--set"),
    (["eval", str(PROBLEM_PATH), str(TRITON), "--device", "tpu"], "--device"),
    (["eval", str(PROBLEM_PATH), str(TRITON), "--timeout", "-3"], "--timeout"),
    (["eval", str(PROBLEM_PATH), str(TRITON), "--backend", "metal"], "backend"),
], ids=["missing-candidate", "missing-problem", "bad-set", "bad-device", "bad-timeout", "bad-backend"])
def test_bad_input_exits_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
