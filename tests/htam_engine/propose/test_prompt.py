"""Prompts carry what the model needs and stay within their bound without losing the contract."""

from __future__ import annotations

import pytest

from htam_engine.evaluate.result import CompilerMessage, Diagnostics, EvalResult, Finding, Mismatch, Status
from htam_engine.families import Backend
from htam_engine.propose.prompt import build_prompt


def _compile_error(lines: int) -> EvalResult:
    log = "\n".join(f"kernel.cu({i}): error: identifier 'foo{i}' is undefined" for i in range(lines))
    return EvalResult(
        status=Status.COMPILE_ERROR,
        diagnostics=Diagnostics(
            compiler=[CompilerMessage("identifier 'foo' is undefined", "kernel.cu", 12, 5)],
            message="nvcc failed",
            log=log,
        ),
    )


@pytest.mark.parametrize("backend, word", [(Backend.CUDA, "load_inline"), (Backend.TRITON, "@triton.jit"), (Backend.CPP, "cpp_sources")])
def test_each_backend_template_holds_problem_guidance_and_contract(kit, backend, word):
    built = build_prompt(kit.make_request(backend=backend))
    user = built.user
    assert kit.PROBLEM_SOURCE.strip() in user
    assert "Output contract" in user and "class ModelNew(nn.Module)" in user and word in user
    assert "Direction for this step: memory_access" in user and "Why: memory_access: prior 0.60" in user
    assert "Vectorized loads (tried 3, succeeded 2, mean gain +0.40)" in user and "Pitfalls: Handle the tail." in user
    assert "fusion -> memory_access (prior): when: after fusing a chain" in user
    assert "first candidate" in user and "float32[16, 1024]" in user
    assert built.trimmed == [] and built.messages()[0]["role"] == "system"


def test_feedback_best_candidate_previous_failure_and_vetoes(kit):
    best = EvalResult(
        status=Status.OK, correct=True, runtime_ms=0.5, ref_runtime_ms=1.0, compile_ref_runtime_ms=0.8, speedup_eager=2.0, speedup_compile=1.6
    )
    wrong = EvalResult(
        status=Status.INCORRECT,
        diagnostics=Diagnostics(message="outputs differ", mismatch=Mismatch(0.5, 0.25, [3, 7], [16, 1024], [16, 1024], "float32", "float32", "unseen-shape")),
        integrity=[Finding("caching", "output reused across calls", "reject")],
    )
    request = kit.make_request(
        best_code="# BEST CODE\n", best_result=best, last_code="# LAST CODE\n", last_result=wrong, veto_reasons=["too many registers", "uses atomics"]
    )
    user = build_prompt(request).user
    assert "# BEST CODE" in user and "speedup vs eager 2x" in user and "speedup vs torch.compile 1.6x" in user and "eager 1 ms" in user
    assert "# LAST CODE" in user and "mismatch on unseen-shape: max abs error 0.5" in user and "worst at index [3, 7]" in user
    assert "integrity reject: caching" in user
    assert "- too many registers" in user and "- uses atomics" in user


def test_long_logs_and_history_are_trimmed_never_the_problem_or_contract(kit):
    big_code = "x = 1\n" * 4000
    request = kit.make_request(
        best_code=big_code,
        best_result=_compile_error(5000),
        last_code=big_code.replace("x", "y"),
        last_result=_compile_error(5000),
        veto_reasons=[f"reason {i}" for i in range(50)],
    )
    full = build_prompt(request, max_chars=10**9)
    bounded = build_prompt(request, max_chars=30_000)
    assert len(full.user) > 50_000 and len(bounded.user) <= 30_000
    assert kit.PROBLEM_SOURCE.strip() in bounded.user and "Output contract (required)" in bounded.user
    assert "lines trimmed" in full.user  # even unbounded, a 5000-line log keeps head and tail only
    assert "y = 1" not in bounded.user  # the failed attempt's code goes first
    assert "reason 49" in bounded.user and "reason 10" not in bounded.user  # newest vetoes stay
    assert "last" in bounded.trimmed


def test_contract_survives_an_impossibly_small_bound(kit):
    built = build_prompt(kit.make_request(best_code="z = 2\n" * 100, best_result=_compile_error(100)), max_chars=100)
    assert "Output contract (required)" in built.user and kit.PROBLEM_SOURCE.strip() in built.user
    assert set(built.trimmed) >= {"last", "veto", "strategies", "best"}


def test_feedback_only_request_has_no_direction_section(kit):
    from htam_engine.memory.types import Retrieval, Selection

    request = kit.make_request(selection=Selection("", [], "feedback-only"), retrieval=Retrieval("", [], []))
    user = build_prompt(request).user
    assert "Direction for this step" not in user and "Strategies" not in user


def test_a_previous_reply_without_a_module_is_reported(kit):
    user = build_prompt(kit.make_request(last_failure="the reply contains no code (no fenced block and no class ModelNew)")).user
    assert "It produced no usable module: the reply contains no code" in user
