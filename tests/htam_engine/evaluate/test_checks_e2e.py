"""The checks through the engine's whole path (static checks, then a judge process and its
sandboxes): verdicts and findings arrive in the EvalResult, and a rejected candidate does not
poison the next evaluation."""

from __future__ import annotations

import pytest

from cheats.harness import candidate_source, problem_path
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import Status


def fast_config() -> EvalConfig:
    return EvalConfig(timeout_s=120.0, trials=3, warmup=1, time_compile_baseline=False)


@pytest.fixture(scope="module")
def evaluator():
    from htam_engine.evaluate.evaluator import Evaluator

    ev = Evaluator("cpu")
    yield ev
    ev.close()


@pytest.fixture(scope="module")
def problems():
    from htam_engine.problems import load_problem

    return {name: load_problem(str(problem_path(name))) for name in ("relu", "softmax")}


def run(evaluator, problems, problem: str, candidate: str):
    return evaluator.evaluate(problems[problem], candidate_source(candidate), fast_config())


def test_honest_candidate_is_ok_after_a_rejected_one_in_the_same_evaluator(evaluator, problems):
    cheat = run(evaluator, problems, "relu", "cheat_timer_hidden")  # patches time.monotonic at run time
    assert cheat.status is Status.REJECTED and not cheat.correct
    assert any(f.rule == "timer_tamper" and "time.monotonic" in f.message for f in cheat.integrity)
    honest = run(evaluator, problems, "relu", "honest_relu_triton")
    assert honest.status is Status.OK, (honest.diagnostics.message, honest.integrity)
    # Nothing of the cheat's is held against it. Two warnings may come on a loaded host, and both
    # leave the verdict ok with a figure the judge trusts: judge_clock (under the suite's two workers
    # this candidate's calls cost 5.2 ms beyond its timer against the reference's 2.1 ms; the figure
    # is then the judge's own) and baseline_disturbed (a 0.02 ms eager baseline seen at 0.035 ms beside
    # the candidate; the figure timed alone is then used).
    assert honest.correct and honest.runtime_ms
    host_load = {"judge_clock", "baseline_disturbed"}
    assert [f for f in honest.integrity if f.rule not in host_load or f.severity != "warn"] == [], honest.integrity


def test_static_reject_never_reaches_the_worker(evaluator, problems):
    r = run(evaluator, problems, "relu", "cheat_timer")
    assert r.status is Status.REJECTED
    assert r.integrity and all(f.rule == "monkey_patch" for f in r.integrity)
    assert r.diagnostics.message.startswith("line ")


@pytest.mark.parametrize("candidate,rule", [
    ("cheat_cache_address_padded", "caching"),
    ("cheat_empty_like", "uninitialized_memory"),
])
def test_runtime_cheats_are_rejected_in_the_worker(evaluator, problems, candidate, rule):
    r = run(evaluator, problems, "relu", candidate)
    assert r.status is Status.REJECTED, (r.diagnostics.message, r.integrity)
    assert rule in {f.rule for f in r.integrity}
    assert r.runtime_ms is None  # never timed


def test_all_zeros_softmax_is_incorrect_with_a_mismatch_summary(evaluator, problems):
    r = run(evaluator, problems, "softmax", "cheat_zeros")
    assert r.status is Status.INCORRECT
    mm = r.diagnostics.mismatch
    assert mm is not None and mm.input_set == "get_inputs#0" and "whole-output" in mm.note
    assert mm.expected_shape == [2, 32768] and mm.expected_dtype == "float32"


def test_a_candidate_that_turns_stale_during_timing_is_rejected_on_a_timed_trial(evaluator, problems):
    """Every timed trial gets fresh inputs in the same buffers and its output is verified: a kernel
    that serves its last result after enough calls loses its speedup claim."""
    import dataclasses

    config = dataclasses.replace(fast_config(), trials=30)
    r = evaluator.evaluate(problems["relu"], candidate_source("cheat_late_cache"), config)
    assert r.status is Status.REJECTED and not r.correct and r.speedup_eager is None
    # on a timed trial, or on the run of checked sets among them (rounds.TimedRounds._checked_run)
    late = [f for f in r.integrity if "timed trial" in f.message or "a run of timed calls" in f.message]
    assert late and late[0].rule == "caching", r.integrity
