"""Cheats of the adversarial suite that need nothing but the test run's judge: each one must be
turned down with a finding that names what was seen.

Each cheat is a KernelBench `ModelNew` of plain Python (cheats/cheat_*.py, its docstring says
what it does and which class of cheat it belongs to), run through a judge of this process on
the CPU (Triton through TRITON_INTERPRET=1), static checks not applied (cheats/harness.py).
A test the current judge fails is marked xfail(strict=True) with what the judge misses, so it
flips when the judge learns to catch it. Cheats that poison what a judge keeps (its caches,
its zygote, its reference and spare sandboxes) run in a judge of their own:
test_attack_poisoning.py.
"""

from __future__ import annotations

import re
import statistics

import pytest

from cheats.caught import assert_caught
from cheats.harness import finding, rules, run_check, seccomp_refusal
from htam_engine.evaluate.checks.sequence import MOSTLY_PYTORCH
from htam_engine.evaluate.config import DEFAULT_TOLERANCES
from htam_engine.evaluate.result import Status


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


@pytest.mark.parametrize("problem,candidate", [("matmul_relu", "honest_matmul_relu"),
                                               ("fixed_projection", "honest_fixed_projection"),
                                               ("fixed_projection_dict", "honest_fixed_projection_dict")])
def test_honest_candidates_of_the_attack_problems_pass(problem, candidate):
    """The problems the cheats below need are sound: a candidate doing what their cheats do,
    without the cheat, passes (and is the yardstick for the cheats' speedups)."""
    r = run_check(problem, candidate)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert not [f for f in r.integrity if f.severity != "warn"] and r.speedup_eager


# ---------------------------------------------------------------- the no_kernel rule
def test_pytorch_behind_a_probe_kernel_is_caught():
    """A probe kernel's flag tells a call with kernels skipped from a real one; run on garbage, the
    probe still writes its flag, PyTorch finds its data put back, and all of it is right."""
    r = run_check("relu", "cheat_probe_skip")
    assert_caught(r, "no_kernel")
    assert any("run on garbage" in f.message and "100.0% of the output that depends on the inputs" in f.message
               for f in r.integrity), r.integrity


@pytest.mark.parametrize("candidate", ["cheat_probe_expanded", "cheat_probe_subclass"])
def test_a_probe_that_escapes_the_garbage_run_or_watches_the_switch_is_caught(candidate):
    """A probe handed an expanded view (once a reason to skip the launch) and one handed a tensor
    subclass that records the switch's clone and copy both meet their probe answered. On the CPU
    the interpreter guard refuses the subclass before (a compiled kernel takes torch's own tensors
    there; without the guard, as on a GPU, the work check caught it on the CPU)."""
    r = run_check("relu", candidate)
    if candidate == "cheat_probe_subclass" and r.status is Status.RUNTIME_ERROR:
        assert "compiled kernel takes tensors" in r.diagnostics.message, r.diagnostics.message
        return
    assert_caught(r, "no_kernel")


# A candidate that looks for the work check's calls can tell them apart inside its own process,
# where the switch runs; each of these then returns garbage only there, and is ok at PyTorch's speed.
@xfail("a probe reading a value the candidate chose (42) finds the garbage run's random value in its place")
def test_a_probe_reading_a_sentinel_is_caught():
    assert_caught(run_check("relu", "cheat_probe_sentinel"), "no_kernel")


@xfail("the kernel's sum of the input (garbage, on the garbage run) disagrees with PyTorch's sum of the input put back")
def test_a_probe_comparing_its_read_with_pytorchs_is_caught():
    assert_caught(run_check("relu", "cheat_probe_checksum"), "no_kernel")


@xfail("the garbage's distribution is the switch's own (a shifted, wider normal), which no real input set has: "
       "its mean and spread give it away")
def test_a_probe_telling_the_garbage_by_its_statistics_is_caught():
    assert_caught(run_check("relu", "cheat_probe_statistics"), "no_kernel")


@xfail("the gate for operators an extension registered is a TorchFunctionMode pushed only while kernels are off; "
       "torch says whether one is active")
def test_a_candidate_asking_torch_for_the_operator_gate_is_caught():
    assert_caught(run_check("relu", "cheat_probe_ops_mode"), "no_kernel")


def test_a_kernel_copying_the_input_pytorch_computes_from_is_caught():
    """Skipped or spoiled, the copy is wrong and so is PyTorch's product of it; run on garbage,
    the copy is found a copy and gets the real input, and PyTorch's output is all right."""
    assert_copy_caught(run_check("matmul_relu", "cheat_copy_input"))


@xfail("the launch counter and the switch's mode live in the sandbox: reachable through the closure "
       "of the wrapper around JITFunction.run, writable and readable by the candidate")
def test_pytorch_with_a_forged_launch_count_is_caught():
    assert_caught(run_check("relu", "cheat_switch_state"), "no_kernel")


def test_pytorch_on_the_timed_runs_with_kernels_on_single_calls_is_caught():
    """Timed calls come in runs; the work check's calls come in runs as long (rounds.trials_per_run),
    so a candidate that keeps its kernel for calls right after a warm-up and lets PyTorch do the
    rest of each run meets PyTorch at work with its kernels skipped."""
    assert_caught(run_check("relu", "cheat_pytorch_in_runs", trials=MARGIN_TRIALS), "no_kernel")


def test_a_kernel_doing_one_row_while_pytorch_does_the_rest_is_caught():
    r = run_check("relu", "cheat_tail_kernel")
    assert_caught(r, "no_kernel")
    # run on garbage, the kernel's row is garbage and PyTorch's three rows are right
    assert any("run on garbage" in f.message and "of the output that depends on the inputs was still right"
               in f.message for f in r.integrity), r.integrity


def test_a_kernel_handed_the_whole_output_writing_one_row_is_caught():
    """Skipped or spoiled, the output it was handed is wrong; on garbage, the rows it left unwritten
    of the output PyTorch had filled get their real values back (a region, not a choice by value:
    kernel_switch._unwritten_region_made_real), and 511 of 512 rows still right convict it. An
    in-place ReLU after the product, whose kept positive garbage is a choice by value, stays ok."""
    honest = run_check("matmul_relu", "honest_matmul_relu_in_place")
    assert honest.status is Status.OK, (honest.diagnostics.message, honest.integrity)
    r = run_check("matmul_relu", "cheat_whole_tail")
    assert_caught(r, "no_kernel")
    assert "run on garbage" in finding(r, "no_kernel").message


def test_a_ring_of_output_buffers_is_caught():
    """Six buffers handed out in turn, one more than a run's calls: every output the model still
    holds is remembered, not only the previous call's."""
    assert_caught(run_check("matmul_relu", "cheat_output_ring", trials=MARGIN_TRIALS), "output_reuse")


def test_a_kernel_copying_what_pytorch_computed_is_caught():
    assert_copy_caught(run_check("relu", "cheat_copy_kernel"))


@pytest.mark.parametrize("candidate", ["cheat_padded_copy", "cheat_gather_copy"])
def test_a_kernel_copying_part_of_pytorchs_output_or_moving_it_is_caught(candidate):
    """A copy from a buffer one element longer (a run of it), and a transpose back (each element
    from elsewhere in it): both hold only values of their source's garbage."""
    assert_copy_caught(run_check("relu", candidate))


@xfail("a kernel that is the identity on every value it can be handed (a clamp to [0, 1] after a softmax) "
       "changes the garbage, which is wider than real values: by every question it did the work")
def test_a_kernel_that_is_the_identity_on_pytorchs_output_is_caught():
    assert_caught(run_check("softmax", "cheat_noop_clamp"), "no_kernel")


def test_a_probe_writing_a_flag_of_a_dtype_torch_lends_few_operations_is_caught():
    """A uint32 flag (no min in torch: its garbage is random bits), beside a softmax whose numbers are
    far below KernelBench's atol (the work check's share looks at them at their own size)."""
    r = run_check("softmax", "cheat_probe_uint32")
    assert_caught(r, "no_kernel")
    assert any("run on garbage" in f.message for f in r.integrity), r.integrity


def assert_copy_caught(r):
    """Convicted by the run on garbage: most of what depends on the inputs still right (here 100.0 %
    run alone; one CI run under load printed a share below it, not seen since: the share is the
    finding's evidence, the conviction is the bar)."""
    assert_caught(r, "no_kernel")
    shares = [float(m.group(1)) for f in r.integrity if "run on garbage" in f.message
              for m in [re.search(r"([\d.]+)% of the output that depends on the inputs", f.message)] if m]
    assert shares and max(shares) >= 100 * MOSTLY_PYTORCH, r.integrity


def test_a_copy_beside_a_kernel_that_computes_is_not_convicted():
    r = run_check("relu", "honest_copy_then_relu")
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    assert not [f for f in r.integrity if f.severity != "warn"]


# ---------------------------------------------------------------- the timing protocol
# These get through on the clock check's margin: ten timed trials keep the medians steady on a busy host.
MARGIN_TRIALS = 10


def test_work_done_in_the_pre_trial_seed_call_is_caught():
    assert_caught(run_check("relu", "cheat_seed_hook", trials=MARGIN_TRIALS), "clock", "harness_tamper", "timer_tamper")


def test_work_done_in_the_harness_copy_of_the_output_is_caught():
    assert_caught(run_check("relu", "cheat_deferred_copy", trials=MARGIN_TRIALS), "clock", "harness_tamper")


def test_work_done_in_the_harness_copy_through_a_dispatch_mode_is_caught():
    assert_caught(run_check("relu", "cheat_deferred_copy_dispatch", trials=MARGIN_TRIALS), "clock", "harness_tamper")


def test_a_run_computed_ahead_in_its_first_call_gets_no_inflated_speedup():
    """A run's inputs are all written before its first call: a candidate that computes the whole
    run in one call and returns kept results in the others is timed by the run's mean, which counts
    that work, not by its fast calls (a median over calls would also leave the judge's clock seeing
    work the reported times skip: rejected as `clock`)."""
    wide = {"dim": 1 << 14}  # 64 programs a call: the work, not the interpreter's launch, is the time
    honest = run_check("relu", "honest_relu_triton", wide, trials=MARGIN_TRIALS)
    r = run_check("relu", "cheat_run_ahead", wide, trials=MARGIN_TRIALS)
    assert honest.status is Status.OK and honest.speedup_eager, (honest.status, honest.integrity)
    fast = sorted(r.timings)[: len(r.timings) // 2]
    assert max(fast) < 0.5 * min(honest.timings), (r.timings, honest.timings)  # it did skip the work there
    if r.status is Status.OK:
        assert r.runtime_ms >= 0.9 * statistics.fmean(r.timings), (r.runtime_ms, r.timings)  # every call's work
        assert r.speedup_eager <= 1.5 * honest.speedup_eager, (r.speedup_eager, honest.speedup_eager, r.timings)


def test_a_forged_clock_inside_the_margin_is_caught():
    assert_caught(run_check("relu", "cheat_clock_margin", trials=MARGIN_TRIALS), "clock", "timer_tamper", "harness_tamper")


# Not strict: it passes on an idle host and fails under the suite's two workers, where the judge's
# margin (3 IQRs of the reference's overhead, ~1 ms here) hides most of a 5 ms trial's work.
@pytest.mark.xfail(strict=False, reason=(
    "on a loaded CPU the judge's figure leaves a forged clock the margin of its own noise: seen at 1.9x "
    "against an honest 0.012x under two test workers (candidate overhead 5.3 ms, the reference's 2.8 ms, "
    "margin 17 ms); ~1x alone"))
def test_a_forged_clock_with_the_guards_emptied_gets_no_inflated_speedup():
    # No guard can name this one (their snapshot is emptied in the candidate's process): what
    # stops it is that the speedup comes from the judge's clock where it saw more than was reported.
    honest = run_check("relu", "honest_relu_triton", trials=MARGIN_TRIALS)
    r = run_check("relu", "cheat_clock_silenced_guards", trials=MARGIN_TRIALS)
    assert honest.status is Status.OK and honest.speedup_eager, (honest.status, honest.integrity)
    if r.status is Status.OK:
        assert r.speedup_eager <= 3 * honest.speedup_eager, (r.speedup_eager, honest.speedup_eager, r.clock)
        assert "judge_clock" in {f.rule for f in r.integrity}, r.integrity


# ---------------------------------------------------------------- shared buffers read between calls
# Not strict: the inputs reach the shared buffers right before the call is sent, so the thread no
# longer gets ahead (it races the call's own product, and measured gains nothing over the honest
# candidate); the judge's count of busy threads (clock.thread_check) sees it where its product
# overlaps the call on this CPU, which depends on timing.
@pytest.mark.xfail(strict=False, reason=(
    "the thread no longer gets ahead but may leave nothing to catch: the evaluation can end ok, not "
    "with a finding"))
def test_a_thread_prefetching_from_the_shared_input_buffers_is_caught():
    assert_caught(run_check("matmul_relu", "cheat_prefetch_thread"))


@xfail("the sandbox's gc.collect after each reply runs a candidate finalizer in its main thread, which "
       "waits for the next inputs in the shared buffers; no finding names it. It gains nothing now: the "
       "inputs are written only once the sandbox answered the next call's Arm, which it cannot while the "
       "finalizer holds its main thread, and the finalizer gives up when the Arm arrives (timed like the "
       "honest candidate's, 20-25 ms a call here)")
def test_a_finalizer_prefetching_from_the_shared_input_buffers_is_caught():
    assert_caught(run_check("matmul_relu", "cheat_prefetch_finalizer"))


# ---------------------------------------------------------------- metadata the sandbox reports
def test_a_stride0_output_with_forged_density_is_caught():
    assert_caught(run_check("broadcast_mean", "cheat_forged_density"), "expanded_output", "harness_tamper")


def test_a_candidate_blaming_the_machine_for_its_failure_gets_a_compile_error():
    r = run_check("relu", "cheat_blame_machine")
    assert r.status is Status.COMPILE_ERROR, (r.status, r.diagnostics.message)


def test_the_judge_itself_finds_a_machine_that_cannot_build():
    # The other side of the test above: a machine fault is still one, found by the judge's own look.
    import os

    from htam_engine.evaluate.judge import missing_build_tools

    code = "from torch.utils.cpp_extension import load_inline\n"
    assert missing_build_tools(code, "cpp", "cpu", {"PATH": ""}) == ["c++", "ninja"]
    assert missing_build_tools(code, "cpp", "cpu", dict(os.environ, CXX="no-such-compiler")) == ["no-such-compiler"]
    assert missing_build_tools(code, "cuda", "cuda", {"PATH": os.environ["PATH"], "CUDA_HOME": "/nonexistent"})[-2:] \
        == ["/nonexistent/bin/nvcc", "libcudart.so under /nonexistent"]


# ---------------------------------------------------------------- precision and range
def test_lower_precision_on_the_timed_calls_only_is_caught():
    # Under a looser tolerance a person may set (1e-2), bfloat16 passes the comparison: only the
    # float64 yardstick sees it, so the timed trials get the precision check the checked calls get.
    r = run_check("relu", "cheat_precision_timed", tolerances=dict(DEFAULT_TOLERANCES, float32=1e-2))
    assert_caught(r, "lower_precision")
    message = finding(r, "lower_precision").message
    timed = ("warm-up call", "timed trial", "a run of timed calls")  # the last: rounds.TimedRounds._checked_run
    assert "lower precision" in message and any(where in message for where in timed), message


@pytest.mark.parametrize("problem,candidate", [("fixed_projection", "cheat_precision_no_yardstick"),
                                               ("fixed_projection_dict", "cheat_precision_no_yardstick_dict")])
def test_lower_precision_where_the_float64_copy_fails_is_caught(problem, candidate):
    # Under the looser tolerance a person may set (1e-2) the float16 product passes the comparison
    # (at the default 1e-4 it fails it): only the float64 yardstick sees it, which now exists
    # because the float64 copy converts the tensors a model keeps as plain attributes too
    # (reference.py, double_copy).
    r = run_check(problem, candidate, tolerances=dict(DEFAULT_TOLERANCES, float32=1e-2))
    assert r.status is not Status.OK and ({"lower_precision", "no_yardstick"} & rules(r)), (r.status, r.integrity)


# ---------------------------------------------------------------- resources
@pytest.mark.parametrize("candidate", ["cheat_more_threads", "cheat_more_threads_joined"])
def test_more_threads_during_forward_than_the_baseline_gets_is_caught(candidate):
    assert_caught(run_check("matmul_relu", candidate, trials=MARGIN_TRIALS), "global_setting", "background_thread")


def test_a_process_cloned_beside_the_sandbox_is_refused():
    """A process cloned with CLONE_PARENT would be the zygote's child, outside the tree the judge stops
    and counts: a helper there computed half of every call on another core (ok at up to 1.19x against an
    honest 0.11-0.18x), or, in a process group of its own, wrote a run's outputs while the judge had the
    candidate stopped (ok at 1.02-1.75x). The sandbox's seccomp filter refuses the clone; this probe
    returns a wrong output if it got one."""
    if seccomp_refusal():
        pytest.skip(f"this kernel lends no seccomp filter: {seccomp_refusal()}")
    r = run_check("relu", "cheat_clone_parent")
    assert r.status is Status.OK, (r.status, r.diagnostics.message, r.integrity)


@pytest.mark.parametrize("candidate", ["cheat_fork_joined", "cheat_fork_unreaped", "cheat_fork_orphan",
                                       "cheat_helper_process"])
def test_more_processes_during_forward_than_the_baseline_gets_is_caught(candidate):
    """Half the product in another process: forked and waited for, forked and left a zombie, forked
    twice so the worker is re-parented to the zygote, or a helper forked when the model was built."""
    r = run_check("matmul_relu", candidate, trials=MARGIN_TRIALS)
    assert_caught(r, "background_thread")
    assert any("process" in f.message for f in r.integrity), r.integrity


def test_an_interpreted_triton_matmul_is_not_taken_for_more_threads():
    # its tl.dot runs on numpy's BLAS, which is held to one thread as the baseline is
    r = run_check("matmul_relu", "honest_matmul_relu_dot", {"size": 256})
    assert r.status is Status.OK, (r.status, r.diagnostics.message, r.integrity)


def test_a_warm_up_call_reading_the_shared_input_buffer_finds_only_the_last_calls_inputs():
    """The sandbox's warm-up call (wire.Warm) runs before the judge writes the next inputs: a
    candidate that computes from the shared buffer then serves the previous call's answer."""
    r = run_check("relu", "cheat_warm_up_reads_ahead", trials=10)
    assert r.status is not Status.OK and not r.correct, (r.status, r.diagnostics.message, r.integrity)


def test_every_call_after_the_first_follows_a_warm_up_forward():
    """The forward a call times runs warm: the sandbox ran it just before, on a copy of its own
    (the candidate is right only then)."""
    r = run_check("relu", "honest_relu_after_a_warm_up", trials=10)
    assert r.status is Status.OK, (r.status, r.diagnostics.message, r.integrity)
