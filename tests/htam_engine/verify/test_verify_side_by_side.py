"""htam's verdict beside KernelBench's: a batch's bests exported and each judged by both (what
`htam batch --verify` and `htam verify` do), the agreement rules, and the command's answers to bad input. KernelBench
is the test double under fake_kernelbench/ here (the real one needs CUDA; see the gpu tests)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend
from htam_engine.verify import report
from htam_engine.verify.checkout import find_checkout
from htam_engine.verify.kernelbench import KernelBenchVerdict
from htam_engine.verify.settings import KernelBenchSettings
from htam_engine.verify.side_by_side import Verification

FAKE = Path(__file__).parent / "fake_kernelbench"
DATA = Path(__file__).parents[1] / "loop" / "data"
PROBLEM = DATA / "scale_relu.py"
TRITON = DATA / "triton_scale_relu.py"
QUICK = KernelBenchSettings(correct_trials=2, perf_trials=5)


def _pair(htam_status: Status, htam_speedup: float | None, kb: KernelBenchVerdict) -> Verification:
    h = EvalResult(status=htam_status, correct=htam_status is Status.OK, speedup_eager=htam_speedup)
    return Verification("s.py", "p", "cuda", Backend.TRITON, KernelBenchSettings(), h, kb)


KB_2X = KernelBenchVerdict(compiled=True, correct=True, runtime_ms=0.5, ref_runtime_ms=1.0)


@pytest.mark.parametrize("htam_status,htam_speedup,kb,agrees,gap", [
    (Status.OK, 2.05, KB_2X, True, 0.025),
    (Status.OK, 1.9, KB_2X, False, -0.05),
    (Status.INCORRECT, None, KB_2X, False, None),
    (Status.OK, 2.0, KernelBenchVerdict(compiled=True, correct=False), False, None),
    (Status.INCORRECT, None, KernelBenchVerdict(compiled=True, correct=False), True, None),
    (Status.COMPILE_ERROR, None, KernelBenchVerdict(compiled=False), True, None),
    (Status.OK, 2.0, KernelBenchVerdict(error="timed out"), False, None),
], ids=["within 3 %", "5 % apart", "htam rejects", "KernelBench rejects", "both reject", "neither builds",
        "no KernelBench verdict"])
def test_agreement_is_the_same_verdict_and_speedups_within_3_percent(htam_status, htam_speedup, kb, agrees, gap):
    v = _pair(htam_status, htam_speedup, kb)
    assert v.agrees is agrees
    assert v.speedup_gap == (None if gap is None else pytest.approx(gap))


def test_a_gap_in_kernelbench_s_mean_alone_is_shown_against_its_medians(capsys):
    """One slow trial of five (a launch landing late, a power cap) moves KernelBench's mean, not its median:
    `htam verify` shows its trials' spread and the gap against their medians beside the reported gap."""
    from htam_engine.cli.verify_cmd import print_side_by_side

    kb = KernelBenchVerdict(compiled=True, correct=True, runtime_ms=2.8, ref_runtime_ms=2.0,
                            runtime_trials=(1.0, 1.0, 1.0, 1.0, 8.0), ref_runtime_trials=(2.0,) * 5)
    v = _pair(Status.OK, 2.0, kb)
    assert v.speedup_gap == pytest.approx(2.0 / (2.0 / 2.8) - 1) and not v.agrees
    assert kb.median_speedup == pytest.approx(2.0) and v.median_gap == pytest.approx(0.0)
    print_side_by_side(v)
    out = capsys.readouterr().out
    assert "kernel median 1, 1-8; reference median 2, 2-2" in out
    assert "they DISAGREE (against KernelBench's medians: +0.0 %)" in out
    assert json.loads(json.dumps(v.to_dict()))["median_gap"] == pytest.approx(0.0)
    assert _pair(Status.OK, 2.0, KB_2X).median_gap is None  # no trials came back: nothing to show


def test_summary_counts_agreement_among_the_solutions_both_timed():
    vs = [_pair(Status.OK, 2.05, KB_2X), _pair(Status.OK, 1.9, KB_2X), _pair(Status.INCORRECT, None, KB_2X)]
    s = report.summary(vs)
    assert (s["solutions"], s["verdicts_agree"], s["both_timed"], s["within_agreement"]) == (3, 2, 2, 1)
    assert s["worst_gap"] == pytest.approx(-0.05)
    md = report.markdown(vs)
    assert md.count("\n| p |") == 3 and "within 3 % of KernelBench's: 1 of 2" in md


def test_a_batch_s_bests_are_exported_verified_by_both_and_tabled_in_its_report(tmp_path, monkeypatch):
    from htam_engine.loop.batch import Batch, BatchSpec
    from htam_engine.problems import load_problem
    from htam_engine.verify.exports import verify_batch

    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path / "sessions"))
    problems = [load_problem(str(PROBLEM))]
    batch = Batch(BatchSpec(suites=[str(PROBLEM)], out=str(tmp_path / "out"), steps=1, backend="triton",
                            proposer="offline", trials=3, compile_baseline=False))
    asyncio.run(batch.run(problems))
    assert "Agreement with KernelBench" not in (batch.out / "report.md").read_text()

    seen = []
    doc = verify_batch(batch, problems, find_checkout(FAKE), QUICK, on_done=lambda i, n, v: seen.append((i, n)))
    assert seen == [(1, 1)]
    solution = batch.out / "solutions" / "scale_relu.py"
    assert solution.read_text().startswith("# htam solution for scale_relu")
    v = batch.verification.verifications[0]  # both judged it, with KernelBench's trial counts
    assert v.backend is Backend.TRITON and v.problem == "scale_relu" and v.solution == str(solution)
    assert v.htam.status is Status.OK and v.htam_correct and len(v.htam.timings) == QUICK.perf_trials
    assert v.kernelbench.correct and v.kernelbench.runtime_stats["num_trials"] == QUICK.perf_trials
    assert v.kernelbench.metadata["double_called_with"]["backend"] == "triton"
    assert v.speedup_gap == pytest.approx((v.htam.speedup_eager - v.kernelbench.speedup) / v.kernelbench.speedup)
    cells = dict(zip(report.HEADERS, report.row(v)))
    assert cells["problem"] == "scale_relu" and cells["htam"] == "ok" and cells["KernelBench"] == "correct"
    assert cells["gap"].endswith(" %")
    row = doc["verify"]["rows"][0]  # the same, as plain data in results.json
    assert row["htam"]["status"] == "ok" and row["htam"]["result"]["speedup_eager"] == v.htam.speedup_eager
    assert row["kernelbench"]["status"] == "correct" and row["settings"]["perf_trials"] == 5
    assert json.loads((batch.out / "verify.json").read_text())["rows"][0]["kernelbench"] == row["kernelbench"]
    assert json.loads((batch.out / "results.json").read_text())["verify"]["summary"]["solutions"] == 1
    text = (batch.out / "report.md").read_text()
    assert "## Agreement with KernelBench (htam verify)" in text and "| scale_relu | ok |" in text


def _htam(args: list[str], capsys) -> tuple[int, str]:
    """Exit status and standard error of `htam ARGS` run here; standard output stays in capsys."""
    from htam_engine.cli import main

    code = main(args)
    out, err = capsys.readouterr()
    print(out, end="")
    return code, err


def test_verify_refuses_bad_input_in_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("HTAM_KERNELBENCH", raising=False)
    code, err = _htam(["verify", str(tmp_path / "missing.py"), str(PROBLEM)], capsys)
    assert code == 2 and "cannot read solution" in err
    code, err = _htam(["verify", str(TRITON), str(tmp_path / "missing.py")], capsys)
    assert code == 2 and "missing.py" in err
    code, err = _htam(["verify", str(TRITON), str(PROBLEM)], capsys)
    assert code == 2 and "set HTAM_KERNELBENCH" in err and len(err.strip().splitlines()) == 1
    code, err = _htam(["verify", str(TRITON), str(PROBLEM), "--kernelbench", str(FAKE), "--device", "cpu"], capsys)
    assert code == 2 and "runs on CUDA only" in err
    code, err = _htam(["batch", str(PROBLEM), "--verify", "--out", str(tmp_path / "b"), "--kernelbench", str(FAKE)],
                      capsys)
    assert code == 2 and "runs on CUDA only" in err and not (tmp_path / "b").exists()


def test_verify_without_a_gpu_says_so_in_one_line(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, err = _htam(["verify", str(TRITON), str(PROBLEM), "--kernelbench", str(FAKE)], capsys)
    assert code == 2 and err.strip() == ("htam: KernelBench's eval_kernel_against_ref runs on CUDA only, and no CUDA "
                                         "GPU is visible on this machine")


@pytest.mark.gpu
def test_kernelbench_s_own_evaluation_agrees_with_htam_on_an_offline_triton_kernel(tmp_path, capsys):
    """The real path: a KernelBench checkout (HTAM_KERNELBENCH), an official-size problem,
    `htam batch --verify` with the offline proposer's Triton kernel, then `htam verify --json` on
    the export. Speedup figures are printed by tests/bench/gpu_verify.py; here the verdicts agree."""
    import os

    if not os.environ.get("HTAM_KERNELBENCH"):
        pytest.skip("set HTAM_KERNELBENCH to a KernelBench checkout")
    problem = find_checkout().root / "KernelBench" / "level1" / "88_MinGPTNewGelu.py"
    out = tmp_path / "batch"
    code, err = _htam(["batch", str(problem), "--device", "cuda", "--backend", "triton", "--proposer", "offline",
                       "--steps", "1", "--no-compile-baseline", "--verify", "--out", str(out)], capsys)
    assert code == 0, err
    assert "[verify 1/1] kernelbench:level1/88_MinGPTNewGelu: htam ok, KernelBench correct" in err
    assert "| kernelbench:level1/88_MinGPTNewGelu | ok |" in (out / "report.md").read_text()
    solution = out / "solutions" / "kernelbench_level1_88_MinGPTNewGelu.py"
    capsys.readouterr()
    code, err = _htam(["verify", str(solution), str(problem), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == "triton" and doc["kernelbench"]["tolerance"] is not None
    assert doc["htam"]["status"] == "ok" and doc["kernelbench"]["status"] == "correct", doc
    assert doc["verdicts_agree"] and doc["speedup_gap"] is not None
    print(f"88_MinGPTNewGelu: htam {doc['htam']['speedup']:.3f}x, KernelBench {doc['kernelbench']['speedup']:.3f}x, "
          f"gap {100 * doc['speedup_gap']:+.1f} %")
