"""Each integrity rule: a cheating candidate is caught, an honest one passes.

CPU only: Triton through TRITON_INTERPRET=1 and one shared C++ source; check_candidate
runs in-process on tiny KernelBench-format problems (cheats/problems/).
"""

from __future__ import annotations

import pytest

from cheats.harness import rules, run_check
from htam_engine.evaluate.result import Status

REJECTED, INCORRECT = Status.REJECTED, Status.INCORRECT


@pytest.mark.parametrize("problem,candidate", [
    ("relu", "honest_relu_triton"),
    ("softmax", "honest_softmax"),
    ("mse", "honest_mse"),
])
def test_honest_candidates_pass_every_check(problem, candidate):
    report = run_check(problem, candidate)
    assert report.status is Status.OK, report.message
    assert report.correct and report.mismatch is None and report.message == ""
    assert [f for f in report.findings if f.severity != "warn"] == []
    assert report.timing_inputs and report.new_model is not None and report.ref_model is not None


# (problem, cheat, status, rule that must be among the findings, words the message must hold)
CAUGHT = [
    # 1. no custom kernel executed
    ("relu", "cheat_pure_torch", REJECTED, "no_kernel", "no custom kernel ran"),
    ("relu", "cheat_fallback", REJECTED, "no_kernel", "fallback"),
    # 2. cached results: by address (with and without padding the launch count), by content
    ("relu", "cheat_cache_address", REJECTED, "caching", "cache"),
    ("relu", "cheat_cache_address_padded", REJECTED, "caching", "new values were written"),
    ("relu", "cheat_cache_content", REJECTED, "caching", "cache"),
    # ... also when it is wrong on unseen shapes too (that mismatch must not hide the cache)
    ("relu", "cheat_cache_address_one_shape", REJECTED, "caching", "new values were written"),
    ("relu", "cheat_output_buffer", REJECTED, "output_reuse", "same memory"),
    # 3. modifying or aliasing inputs
    ("relu", "cheat_mutate_input", REJECTED, "input_mutation", "modified input #0"),
    ("relu", "cheat_alias_input", REJECTED, "input_alias", "shares memory with input #0"),
    # 4. tampering with timers, sync, torch's settings (in plain sight or hidden from a text scan)
    ("relu", "cheat_timer", REJECTED, "timer_tamper", "time.perf_counter"),
    ("relu", "cheat_timer_hidden", REJECTED, "timer_tamper", "time.monotonic"),
    ("relu", "cheat_settings", REJECTED, "global_setting", "torch.get_num_threads()"),
    # 5. the memory-reuse exploit: uninitialized output hoping for the reference's freed result
    ("relu", "cheat_empty_like", REJECTED, "uninitialized_memory", "uninitialized"),
    # 6. work left running after forward returns (a Python thread, a raw native thread)
    ("relu", "cheat_thread", REJECTED, "background_thread", "thread"),
    ("relu", "cheat_native_thread", REJECTED, "background_thread", "native thread"),
    # 7. lazy tensor subclasses; outputs partly uninitialized
    ("relu", "cheat_lazy", REJECTED, "lazy_output", "Deferred"),
    ("relu", "cheat_partial_write", REJECTED, "uninitialized_memory", "differ"),
    # 8. quietly lower precision (within 1e-2, far from float64)
    ("relu", "cheat_low_precision", INCORRECT, "lower_precision", "lower precision"),
    # 10. shape-specialized code
    ("relu", "cheat_shape", INCORRECT, "shape_specialized", "not shown"),
]


@pytest.mark.parametrize("problem,candidate,status,rule,words", CAUGHT, ids=[c[1] for c in CAUGHT])
def test_cheat_is_caught_with_a_finding_that_says_what_was_seen(problem, candidate, status, rule, words):
    report = run_check(problem, candidate)
    assert report.status is status, (report.status, report.message, report.findings)
    assert not report.correct
    assert rule in rules(report), report.findings
    finding = next(f for f in report.findings if f.rule == rule)
    assert words in finding.message, finding.message
    assert report.message  # one line for the user


def test_return_x_passes_kernelbench_inputs_but_not_signed_normal():
    # A copy kernel equals ReLU on [0, 1): only the other distribution exposes it.
    blind = run_check("relu", "cheat_identity", check_other_distribution=False)
    assert blind.status is Status.OK
    report = run_check("relu", "cheat_identity")
    assert report.status is INCORRECT
    assert report.mismatch.input_set == "signed-normal"
    assert report.mismatch.expected_shape == report.mismatch.actual_shape == [4, 256]
    assert report.mismatch.max_abs_error > 0.1 and report.mismatch.where is not None


def test_all_zeros_softmax_fails_the_whole_output_bound():
    report = run_check("softmax", "cheat_zeros")
    assert report.status is INCORRECT
    assert "whole-output relative error" in report.mismatch.note
    # Every element is within atol: the element-wise test alone would have passed it.
    assert report.mismatch.max_abs_error < 1e-2


def test_closed_form_loss_fails_on_other_distributions():
    report = run_check("mse", "cheat_closed_form")
    assert report.status is INCORRECT
    assert report.mismatch.input_set in ("signed-normal", "heavy-tailed", "heavy-tailed (positive)")


def test_reading_harness_memory_is_flagged_statically_and_fails_at_run_time():
    from cheats.harness import candidate_path
    from htam_engine.evaluate.checks import static_findings

    static = static_findings(candidate_path("cheat_gc_scan").read_text(), "triton")
    assert any(f.rule == "harness_memory" and f.severity == "reject" for f in static)
    # Run anyway (as if the text scan were fooled): the candidate runs before the reference
    # on every set, so nothing it finds is the answer.
    assert run_check("relu", "cheat_gc_scan").status is not Status.OK


def test_cpp_extension_calls_are_counted_and_a_fallback_is_caught():
    # One C++ source shared by both candidates: compiled once (shared build cache).
    honest = run_check("relu", "honest_relu_cpp")
    assert honest.status is Status.OK, honest.message
    # The same library's registered operator (torch.ops.htam_checks.relu) counts as well.
    as_op = run_check("relu", "honest_relu_op")
    assert as_op.status is Status.OK, (as_op.message, as_op.findings)
    cheat = run_check("relu", "cheat_cpp_fallback")
    assert cheat.status is REJECTED and "no_kernel" in rules(cheat)


def test_candidate_that_turns_lazy_after_many_calls_is_caught_after_timing():
    from htam_engine.evaluate.checks import recheck_after_timing

    def time_then_recheck(ctx, report):
        assert report.status is Status.OK  # the checks alone cannot see a phase after them
        for _ in range(30):  # what a timing loop does
            report.new_model(*report.timing_inputs)
        return recheck_after_timing(ctx, report)

    findings = run_check("relu", "cheat_late_cache", after=time_then_recheck)
    assert findings and all(f.severity == "reject" for f in findings)
    assert {f.rule for f in findings} & {"no_kernel", "changed_after_timing", "caching"}


def test_recheck_after_timing_is_quiet_for_an_honest_candidate():
    from htam_engine.evaluate.checks import recheck_after_timing

    def time_then_recheck(ctx, report):
        for _ in range(5):
            report.new_model(*report.timing_inputs)
        return recheck_after_timing(ctx, report)

    assert run_check("relu", "honest_relu_triton", after=time_then_recheck) == []
