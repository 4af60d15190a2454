"""Each integrity rule: a cheating candidate is caught, an honest one passes.

CPU only: Triton through TRITON_INTERPRET=1 and one shared C++ source, each candidate in a
sandbox of a judge running in this process, on tiny KernelBench-format problems
(cheats/problems/). Static checks are not applied (cheats/harness.py): every cheat meets the
judge's runtime defences.
"""

from __future__ import annotations

import pytest

from cheats.harness import finding, rules, run_check
from htam_engine.evaluate.config import DEFAULT_TOLERANCES
from htam_engine.evaluate.result import Status

REJECTED, INCORRECT = Status.REJECTED, Status.INCORRECT


@pytest.mark.parametrize("problem,candidate", [
    ("relu", "honest_relu_triton"),
    ("softmax", "honest_softmax"),
    ("mse", "honest_mse"),
    ("int_scale", "honest_int_scale"),
    ("broadcast_mean", "honest_broadcast_mean"),
])
def test_honest_candidates_pass_every_check(problem, candidate):
    r = run_check(problem, candidate)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert r.correct and r.diagnostics.mismatch is None and r.diagnostics.message == ""
    assert [f for f in r.integrity if f.severity != "warn"] == []
    # three timed calls, back to back in one run: one sample (rounds.TRIALS_PER_RUN)
    assert r.runtime_ms and r.ref_runtime_ms and len(r.timings) == 3 and r.runtime_spread.n == 1
    assert r.clock is not None and r.clock.margin_ms > 0


# (problem, cheat, status, rule that must be among the findings, words the message must hold)
CAUGHT = [
    # 1. no custom kernel executed, or one that does no necessary work
    ("relu", "cheat_pure_torch", REJECTED, "no_kernel", "no custom kernel ran"),
    ("relu", "cheat_fallback", REJECTED, "no_kernel", "fallback"),
    # (both met first by the call on garbage before the timed rounds: PyTorch's output still right)
    ("relu", "cheat_decoy_kernel", REJECTED, "no_kernel", "run on garbage"),
    ("relu", "cheat_fallback_padded", REJECTED, "no_kernel", "run on garbage"),
    # 2. cached results: by address (with and without padding the launch count), by content, by
    #    call count; one output buffer handed out again (as itself or as a fresh view)
    ("relu", "cheat_cache_address", REJECTED, "caching", "cache"),
    ("relu", "cheat_cache_address_padded", REJECTED, "caching", "cached"),
    ("relu", "cheat_cache_content", REJECTED, "caching", "cache"),
    ("relu", "cheat_cache_address_one_shape", REJECTED, "caching", "cache"),
    ("relu", "cheat_output_buffer", REJECTED, "output_reuse", "memory it returned"),
    ("relu", "cheat_output_view", REJECTED, "output_reuse", "memory it returned"),
    # 3. modifying or aliasing inputs; an output expanded with stride 0
    ("relu", "cheat_mutate_input", REJECTED, "input_mutation", "modified input #0"),
    ("relu", "cheat_alias_input", REJECTED, "input_alias", "shares memory with input #0"),
    ("broadcast_mean", "cheat_stride0", REJECTED, "expanded_output", "stride 0"),
    # 4. tampering with timers, torch's settings (in plain sight or hidden from a text scan); a
    #    clock slowed with the guards' snapshot rewritten to hide it: the judge's clock disagrees
    ("relu", "cheat_timer", REJECTED, "timer_tamper", "time.perf_counter"),
    ("relu", "cheat_timer_hidden", REJECTED, "timer_tamper", "time.monotonic"),
    ("relu", "cheat_settings", REJECTED, "global_setting", "torch.get_num_threads()"),
    ("relu", "cheat_forge_clock", REJECTED, "clock", "beyond the reported time"),
    # 5. the memory-reuse exploit: uninitialized output hoping for an earlier result
    ("relu", "cheat_empty_like", REJECTED, "uninitialized_memory", "uninitialized"),
    # 6. work left running after forward returns (a Python thread, a raw native thread)
    ("relu", "cheat_thread", REJECTED, "background_thread", "thread"),
    ("relu", "cheat_native_thread", REJECTED, "background_thread", "native thread"),
    # 7. lazy tensor subclasses; outputs partly uninitialized
    ("relu", "cheat_lazy", REJECTED, "lazy_output", "Deferred"),
    ("relu", "cheat_partial_write", REJECTED, "uninitialized_memory", "differ"),
    # 8. quietly lower precision (within a looser tolerance a person chose, 1e-2, far from float64;
    #    under the default 1e-4 the comparison alone fails it), also only after the first calls
    ("relu", "cheat_low_precision", INCORRECT, "lower_precision", "lower precision"),
    ("relu", "cheat_precision_later", INCORRECT, "lower_precision", "lower precision"),
    # 9. forged verdict frames on every descriptor it can find: the sandbox's own channel
    ("relu", "cheat_forge_frame", REJECTED, "protocol", "malformed message"),
    # ... or the serializer of the sandbox's replies rewritten (hidden from the guards): the times
    #    it reports disagree with the judge's clock
    # either clock rule may convict it ("beyond the reported time", or a time under the copy floor)
    ("relu", "cheat_patch_serializer", REJECTED, "clock", "reported"),
    # 10. shape-specialized code
    ("relu", "cheat_shape", INCORRECT, "shape_specialized", "not shown"),
]


# A looser float32 tolerance than KernelBench's 1e-4, as a person may set it: lower precision
# then passes the comparison and only the float64 check can see it.
LOOSE = {"tolerances": dict(DEFAULT_TOLERANCES, float32=1e-2)}
CONFIG = {"cheat_low_precision": LOOSE, "cheat_precision_later": LOOSE}

@pytest.mark.parametrize("problem,candidate,status,rule,words", CAUGHT, ids=[c[1] for c in CAUGHT])
def test_cheat_is_caught_with_a_finding_that_says_what_was_seen(problem, candidate, status, rule, words):
    r = run_check(problem, candidate, **CONFIG.get(candidate, {}))
    assert r.status is status, (r.status, r.diagnostics.message, r.integrity)
    assert not r.correct and r.runtime_ms is None and r.speedup_eager is None
    assert rule in rules(r), r.integrity
    assert words in finding(r, rule).message, finding(r, rule).message
    assert r.diagnostics.message  # one line for the user


def test_a_trial_faster_than_writing_its_output_once_is_a_forged_time():
    # A 1 MB output cannot be written in a microsecond at this host's measured copy bandwidth.
    r = run_check("relu", "cheat_patch_serializer", {"dim": 1 << 16}, trials=2, check_other_distribution=False,
                  check_unseen_shape=False)
    assert r.status is REJECTED and "forged time" in finding(r, "clock").message, r.integrity
    assert r.clock.floor_ms > 0.001 * 4


@pytest.mark.parametrize("problem,candidate,input_set,blind_rule", [
    ("softmax", "cheat_softmax_nomax", "large-magnitude x100", None),  # exp overflows without the max pass
    ("int_scale", "cheat_int32", "wide-integers", None),  # int64 done in 32 bits wraps past 2**31
    # return x equals ReLU on [0, 1); its kernel is a copy, which the work check names without that set
    ("relu", "cheat_identity", "signed-normal", "no_kernel"),
])
def test_wrong_only_on_another_distribution_is_incorrect_naming_that_set(problem, candidate, input_set, blind_rule):
    r = run_check(problem, candidate)
    assert r.status is INCORRECT, (r.status, r.diagnostics.message, r.integrity)
    assert r.diagnostics.mismatch.input_set == input_set
    assert input_set in r.diagnostics.message
    blind = run_check(problem, candidate, check_other_distribution=False)
    if blind_rule is None:
        assert blind.status is Status.OK, blind.diagnostics.message  # only that set exposes it
    else:  # correct on every set it is shown: caught by another rule
        assert blind.status is REJECTED and blind_rule in rules(blind), (blind.status, blind.integrity)


@pytest.mark.parametrize("candidate", ["cheat_phase_rng", "cheat_phase_buffer", "cheat_phase_count"])
def test_telling_timed_calls_from_checked_ones_fails(candidate):
    """Seeds are secret and per call, every call uses the same buffers, every timed trial's
    output is verified: a candidate that serves stale output to what it takes for a timed call
    is caught serving it."""
    r = run_check("relu", candidate, trials=10)
    assert r.status is REJECTED, (r.status, r.diagnostics.message, r.integrity)
    assert "caching" in rules(r), r.integrity
    assert "cache" in finding(r, "caching").message


def test_allocator_phase_detection_sees_every_call_as_checked():
    # Freed memory is perturbed in every call, timed or not: the cheat never finds a call to cheat
    # on, so it computes every output (each timed one verified) and earns an honest figure.
    r = run_check("relu", "cheat_phase_allocator", trials=10)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert len(r.timings) == 10


@pytest.mark.parametrize("candidate", ["cheat_patch_harness", "cheat_sabotage_reference"])
def test_tampering_with_the_harness_or_the_reference_in_the_sandbox_changes_nothing(candidate):
    """The comparison, its norms and the reference live in the judge: patching the sandbox's copies
    (and hiding it from the guards) leaves the zeros these cheats return as wrong as they are."""
    r = run_check("relu", candidate)
    assert r.status is not Status.OK and not r.correct
    assert r.diagnostics.mismatch is not None or rules(r) & {"caching", "harness_tamper"}, r.integrity
    mm = r.diagnostics.mismatch
    assert mm is None or mm.input_set == "get_inputs#0"


def test_poisoning_the_baseline_cache_leaves_the_next_honest_speedup_alone():
    """The baselines are timed in the same evaluation by a sandbox that never ran candidate code;
    no file a sandbox can write feeds a number."""
    alone = run_check("relu", "honest_relu_triton", trials=10)
    poisoner = run_check("relu", "cheat_poison_baseline", trials=10)
    after = run_check("relu", "honest_relu_triton", trials=10)
    assert alone.status is after.status is Status.OK
    # The poison multiplied every stored baseline by 20: an inherited figure would show it. (The
    # eager baseline is compared rather than the speedup: an interpreted Triton kernel's own time
    # swings several-fold on a busy CPU, the eager ReLU's far less.)
    for r in (poisoner, after):
        assert r.ref_runtime_ms is None or r.ref_runtime_ms < 5 * alone.ref_runtime_ms, (alone.ref_spread, r.ref_spread)
    assert after.speedup_eager == pytest.approx(after.ref_runtime_ms / after.runtime_ms)


def test_all_zeros_softmax_fails_the_whole_output_bound():
    r = run_check("softmax", "cheat_zeros")
    assert r.status is INCORRECT
    assert "whole-output relative error" in r.diagnostics.mismatch.note
    # Every element is within atol: the element-wise test alone would have passed it.
    assert r.diagnostics.mismatch.max_abs_error < 1e-4


def test_closed_form_loss_fails():
    # A constant near E[loss] for get_inputs' distribution: sometimes close enough on a draw of it
    # (the seeds are secret, so which set exposes it varies), never on the other distributions.
    r = run_check("mse", "cheat_closed_form")
    assert r.status is INCORRECT and r.diagnostics.mismatch is not None
    assert "caching" not in rules(r)  # a constant is wrong, not stale


def test_reading_the_process_memory_finds_nothing_of_the_harness():
    from cheats.harness import candidate_path
    from htam_engine.evaluate.checks import static_findings

    static = static_findings(candidate_path("cheat_gc_scan").read_text(), "triton")
    assert any(f.rule == "harness_memory" and f.severity == "reject" for f in static)
    # Run anyway (as if the text scan were fooled): the sandbox holds no reference output to find.
    assert run_check("relu", "cheat_gc_scan").status is not Status.OK


def test_cpp_extension_calls_count_and_a_fallback_is_caught():
    # One C++ source in three candidates: each is built under its own key (the build cache is keyed by
    # the whole candidate source), three CPU builds.
    honest = run_check("relu", "honest_relu_cpp")
    assert honest.status is Status.OK, honest.diagnostics.message
    # The same library's registered operator (torch.ops.htam_checks.relu) passes the work check too.
    as_op = run_check("relu", "honest_relu_op")
    assert as_op.status is Status.OK, (as_op.diagnostics.message, as_op.integrity)
    cheat = run_check("relu", "cheat_cpp_fallback")
    assert cheat.status is REJECTED and "no_kernel" in rules(cheat)


def test_a_candidate_that_turns_stale_during_timing_is_caught_on_a_timed_trial():
    r = run_check("relu", "cheat_late_cache", trials=30)
    assert r.status is REJECTED and not r.correct
    # on a timed trial, or on the run of checked sets among them (rounds.TimedRounds._checked_run)
    timed = [f for f in r.integrity if "timed trial" in f.message or "a run of timed calls" in f.message]
    assert timed and timed[0].rule == "caching", r.integrity
