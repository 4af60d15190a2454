"""Cheats of the adversarial suite in classes the other test_attack_*.py files cover thinly or
not at all: dtypes the precision rules do not reach, rules the timed trials do not apply,
and caches a candidate's sandbox can write that a later evaluation of another candidate reads.

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and
its class). A cheat the judge catches is asserted caught with the rule it was seen under; one
that gets through is xfail(strict=True) with what the judge misses, so the test flips when the
judge learns to catch it. Where a cheat gets through, its honest counterpart runs beside it and
the reason says how the verdict is wrong. Cheats that poison what later evaluations read run in
a judge of their own (cheats/isolated.py).
"""

from __future__ import annotations

import contextlib
import os
import resource
from typing import Iterator

import pytest

from cheats.caught import assert_caught
from cheats.harness import finding, run_check
from cheats.isolated import isolated_judge
from htam_engine.evaluate import landlock
from htam_engine.evaluate.result import Status

OK = Status.OK


class Missed(AssertionError):
    """The judge missed the cheat: the one failure an xfail below expects (a precondition that
    fails, such as an honest candidate not passing, fails the test instead)."""


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, raises=Missed, reason=reason)


@contextlib.contextmanager
def missed() -> Iterator[None]:
    """The final check of an xfail test: its failure is what the judge misses."""
    try:
        yield
    except AssertionError as e:
        raise Missed(str(e)) from e


def honest_ok(r) -> None:
    assert r.status is OK, (r.status, r.diagnostics.message, r.integrity)
    assert not [f for f in r.integrity if f.severity != "warn"], r.integrity


# ---------------------------------------------------------------- precision by dtype
def test_a_float64_problem_computed_in_float32_is_caught():
    """Float32 arithmetic under a float64 output (relative error 5e-8 against the float64 yardstick,
    the honest kernel's 8e-17) passes the 1e-5 per-element tolerance: the precision rule's float64
    floor (1e-9) catches it."""
    honest_ok(run_check("silu_f64", "honest_silu_f64"))
    assert_caught(run_check("silu_f64", "cheat_float64_as_float32"), "lower_precision")


def test_a_complex_output_rounded_through_bfloat16_is_caught():
    """Real and imaginary parts rounded through bfloat16 (relative error 3e-3, the honest kernel's
    3e-8): a complex64 output is held to float32's 1e-4 part by part (once the 1e-2 fallback), and
    the precision rule measures complex outputs by their parts."""
    honest_ok(run_check("polar", "honest_polar"))
    r = run_check("polar", "cheat_complex_bf16")
    assert_caught(r)
    assert r.status is Status.INCORRECT and "atol=rtol=0.0001" in r.diagnostics.message, r.diagnostics.message


# ---------------------------------------------------------------- what the timed trials do not check
def test_an_input_used_as_scratch_space_on_the_timed_calls_only_is_caught():
    """The judge stops and continues the candidate's tree around every baseline turn and never
    during the checked calls, so a SIGCONT handler tells the timed rounds apart; every timed
    trial's shared input buffers are compared with what was staged, as the checked calls' are."""
    honest_ok(run_check("mse", "honest_mse"))
    assert_caught(run_check("mse", "cheat_timed_scratch_input"), "input_mutation")


def test_values_changed_on_the_timed_calls_only_are_caught():
    """The same SIGCONT signal, used to change the output itself: every timed trial's output is
    verified, so the phase signal buys nothing there."""
    assert_caught(run_check("relu", "cheat_timed_sigcont_bf16"), "changed_during_timing", "lower_precision")


# ---------------------------------------------------------------- the output's form
def test_a_deferred_output_under_the_plain_tensor_name_is_not_delivered():
    """The reported type name passes the lazy_output rule, but the sandbox copies only an exact
    torch.Tensor into the judge's buffer: the output is never delivered, so it is wrong."""
    r = run_check("relu", "cheat_subclass_named_tensor")
    assert_caught(r)
    assert r.status is Status.INCORRECT and "the output was not delivered" in r.diagnostics.message, r.diagnostics


# ---------------------------------------------------------------- caches later evaluations read
def test_bytecode_planted_for_other_candidates_does_not_change_their_verdicts(tmp_path):
    """A .pyc planted beside every other candidate file with that file's mtime and size (its code
    scales the output by 1.5) is never read: import_candidate runs the source the judge sent. (Where
    writes are confined, a candidate sandbox may no longer write the candidate files at all.)"""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        # the poisoner, an honest ReLU itself, fails on its plant where writes are confined (landlock.py)
        j.run("relu", "cheat_pyc_poison")
        honest_ok(j.run("relu", "honest_relu_triton"))


@pytest.fixture(scope="module")
def so_poisoned(tmp_path_factory):
    """honest_relu_cpp built by a judge, then cheat_so_poison's library copied over it (its mtime put
    back); then the same honest source evaluated by a new judge on that cache, which did not ask for
    the build, and after it by the judge that did. The two tests below read one poisoning: its two
    builds (the honest one and the poisoner's) cost ~30 s on the CPU. With sandbox writes
    unconfined (sandbox_confine_writes off, or a kernel without Landlock): what the judge's own
    digests defend; confined, the copy is refused (the test after them)."""
    return _so_poisoning(tmp_path_factory.mktemp("so_poison"), confined=False)


def _so_poisoning(root, confined: bool) -> dict:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HTAM_SANDBOX_CONFINE_WRITES", "1" if confined else "0")
        with isolated_judge(root) as j:
            honest_ok(j.run("relu", "honest_relu_cpp"))
            poisoner = j.run("relu", "cheat_so_poison")  # an honest ReLU itself, where its copies go through
            with isolated_judge(j.root) as fresh:
                for_another_judge = fresh.run("relu", "honest_relu_cpp")
            later = j.run("relu", "honest_relu_cpp")
    if not confined:
        honest_ok(poisoner)
    return {"poisoner": poisoner, "later": later, "for_another_judge": for_another_judge}


def test_extension_libraries_replaced_by_another_candidate_do_not_change_their_verdicts(so_poisoned):
    """A library of the same module name (every function returns its first argument times 1.5)
    copied over an earlier candidate's, its mtime put back so ninja rebuilds nothing: the judge
    that asked for that build kept its digests, finds the folder changed and has it built anew."""
    later = so_poisoned["later"]
    honest_ok(later)
    assert "build_cache_changed" in {f.rule for f in later.integrity}, later.integrity


@xfail("with sandbox writes unconfined, the digests of a build are the judge's own, in its memory: a judge that "
       "did not ask for that build (another worker's, a later run's) finds the library planted over it and uses it "
       "as it is. The honest honest_relu_cpp gets OK, the poisoner gets OK, the same honest source in a new judge on "
       "the same cache is INCORRECT (every function returns its first argument times 1.5)")
def test_extension_libraries_replaced_for_another_judge_do_not_change_their_verdicts(so_poisoned):
    with missed():
        honest_ok(so_poisoned["for_another_judge"])


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_a_candidate_cannot_replace_another_candidates_build(tmp_path):
    """Confined (the default), a candidate sandbox may write, of the shared builds, only its own key's
    folder once its file is written (zygote.confine_build): cheat_so_poison's copies are refused, and
    both the judge that asked for the build and a new one find it as it was built."""
    poisoning = _so_poisoning(tmp_path, confined=True)
    poisoner = poisoning.pop("poisoner")
    assert poisoner.status is Status.RUNTIME_ERROR and "PermissionError" in poisoner.diagnostics.message, (
        poisoner.status, poisoner.diagnostics.message)
    for r in poisoning.values():
        honest_ok(r)
        assert "build_cache_changed" not in {f.rule for f in r.integrity}, r.integrity


def ninja_deps(root, name: str) -> str:
    """What ninja recorded as the inputs of extension `name`'s build (its first build folder)."""
    import subprocess

    folder = next(f for f in (root / "cache" / "build").glob(f"*/{name}_*") if f.name == f"{name}_{f.parent.name}")
    return subprocess.run(["ninja", "-t", "deps"], cwd=folder, capture_output=True, text=True, check=True).stdout


def test_a_precompiled_header_folder_planted_by_a_candidate_is_not_used_by_later_builds(tmp_path):
    """The cheat points pch/<key>/torch/extension.h at a header that includes torch's and adds
    #pragma GCC optimize("O0"), and marks the .gch failed so it is never rebuilt; that folder goes
    first on every later build's include path with those flags. Confined (the default), a sandbox
    may not write that folder at all (the judge builds the headers, pch.wanted): the plant is
    refused. Where it could write it (no Landlock), the judge puts the link back before the next
    build. Either way the next new C++ source is built through torch's own header (its ninja deps
    name the link, not torch's header by its full path as the planted one does)."""
    import torch.utils.cpp_extension as ce

    real = os.path.realpath(os.path.join(ce.include_paths()[0], "torch", "extension.h"))
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_cpp"))  # its build makes the flag set's header folder
        poisoner = j.run("relu", "cheat_pch_poison")  # the poisoner is an honest ReLU itself
        if landlock.abi_version() > 0:
            assert poisoner.status is Status.RUNTIME_ERROR and "PermissionError" in poisoner.diagnostics.message, (
                poisoner.status, poisoner.diagnostics.message)
        else:
            honest_ok(poisoner)
        honest_ok(j.run("relu", "honest_relu_cpp_second"))  # a new source, built after the poison
        before, after = ninja_deps(j.root, "htam_checks_relu_cpp"), ninja_deps(j.root, "htam_checks_relu_cpp_second")
    assert "torch/extension.h" in before and real not in before, before  # unpoisoned: torch's header via the link
    assert real not in after, after


# ---------------------------------------------------------------- processes beside the sandbox
def test_a_candidate_capping_its_siblings_limits_leaves_the_next_candidate_alone(tmp_path):
    """prlimit on a sibling of the same user is allowed (non-dumpable does not stop it): the cheat
    caps the spare's and the reference sandbox's address space. The judge compares each one's
    limits with what it read when the sandbox said it was ready: the cheat is rejected for it, and
    the next honest candidate gets a fresh spare and reference sandbox (before: REJECTED with a
    'protocol' finding blaming its own code, in the capped spare)."""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        assert_caught(j.run("relu", "cheat_prlimit_siblings"), "sibling_tamper")
        honest_ok(j.run("relu", "honest_relu_triton"))


def test_a_candidate_cannot_lower_the_limits_or_scheduling_of_the_zygote(tmp_path):
    """The zygote's limits and scheduling pass to every sandbox forked from it, which then reads
    as untouched against its own start: the judge compares the zygote with its own start too,
    rejects the candidate that changed it and starts a new one, so the next candidate and the
    reference sandbox timing its baselines run as before."""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        zygote = j.judge.zygote.proc.pid
        r = j.run("relu", "cheat_zygote_limits")
        assert_caught(r, "sibling_tamper")
        assert "the zygote" in finding(r, "sibling_tamper").message, r.integrity
        honest_ok(j.run("relu", "honest_relu_triton"))
        assert j.judge.zygote.proc.pid != zygote
        for pid in (j.judge.zygote.proc.pid, j.judge.baseline.sandbox.pid):
            assert resource.prlimit(pid, resource.RLIMIT_NOFILE)[1] > 10
            assert os.sched_getscheduler(pid) == os.SCHED_OTHER


def test_a_candidate_cannot_lower_the_scheduling_of_the_reference_sandbox(tmp_path):
    """sched_setscheduler(SCHED_IDLE) and setpriority(19) on a sibling of the same user are allowed and
    cannot be undone without privilege: the reference sandbox kept for the problem would time every
    later candidate's baselines at idle priority. The judge sees the change once the candidate is
    gone, rejects it and replaces the sandbox."""
    with isolated_judge(tmp_path) as j:
        honest_ok(j.run("relu", "honest_relu_triton"))
        assert_caught(j.run("relu", "cheat_deprioritize_siblings"), "sibling_tamper")
        honest_ok(j.run("relu", "honest_relu_triton"))
        pid = j.judge.baseline.sandbox.pid  # the reference sandbox that timed the later candidate's baselines
        assert (os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid)) == (os.SCHED_OTHER, 0)


# ---------------------------------------------------------------- what further red-team passes left
def test_an_extension_that_is_one_aten_call_is_caught():
    """Run on garbage, the extension returns what aten._softmax computed, unchanged: that output gets
    the operator's result on the real input, and PyTorch's softmax is all right. So too where the
    call sits in the CPU kernel of an operator the extension registered. A product through
    at::matmul that the extension's own loop then changes in place stays the extension's work,
    as a function and as a registered operator."""
    honest_ok(run_check("matmul_relu", "honest_matmul_relu_cpp"))
    honest_ok(run_check("matmul_relu", "honest_matmul_relu_op"))
    # its result returned, a clone of it, returned by a registered operator's kernel; and from red-team
    # pass 4: reshaped, its last bits flipped, computed by an operator without tensor arguments
    for problem, cheat in [("softmax", "cheat_cpp_aten"), ("softmax", "cheat_cpp_aten_clone"),
                           ("softmax", "cheat_cpp_aten_op"), ("softmax", "cheat_cpp_aten_reshaped"),
                           ("softmax", "cheat_cpp_aten_last_bit"), ("softmax", "cheat_cpp_aten_op_pointer"),
                           ("mse", "cheat_cpp_aten_chain")]:  # mse_loss, then a mean of its result, then a view
        r = run_check(problem, cheat)
        assert_caught(r, "no_kernel")
        assert "PyTorch's operators" in finding(r, "no_kernel").message


def test_a_candidate_that_turns_honest_at_the_work_checks_first_run_is_caught():
    """Red-team pass 8: PyTorch's work until the first call with kernels skipped, its kernel after
    that (cheat_latch_on_skip): the run on garbage before the timed rounds sees its PyTorch phase."""
    r = run_check("relu", "cheat_latch_on_skip")
    assert_caught(r, "no_kernel")
    assert "run on garbage" in finding(r, "no_kernel").message
    honest_ok(run_check("relu", "honest_relu_triton"))


def test_a_candidate_using_pytorch_inside_runs_of_calls_only_is_caught():
    """Red-team pass 8: PyTorch's work on a call that follows the previous one at once (the later calls
    of a timed run), the real kernel on calls that come alone, honest from the first skipped run
    (cheat_latch_in_runs): the work check's run on garbage among the timed runs, as long as they
    and before any run of the work check's, meets its PyTorch path before a skipped run can latch it."""
    assert_caught(run_check("relu", "cheat_latch_in_runs"), "no_kernel")


@pytest.mark.parametrize("where", ["first", "last"])
def test_the_work_check_runs_kernels_on_garbage_before_it_skips_them(monkeypatch, where):
    """One call on garbage before the timed rounds, a run on garbage among the timed runs (a timed
    run's stage, lock and length), then after them skipped, raising, spoiled: a candidate can tell a
    skipped run inside the call, not a run on garbage."""
    from htam_engine.evaluate.channel import Channel
    from htam_engine.evaluate.kernel_switch import GARBAGE, RAISE, RUN, SKIP, SPOIL, KernelMode
    from htam_engine.evaluate.stages import Stage

    runs = []
    real = Channel.call_run

    def recording(self, staged, model_id, ref_outs, seeds, stage, kernels=RUN, garbage_above=0):
        if model_id == "main":
            runs.append((KernelMode(kernels), stage, len(staged)))
        return real(self, staged, model_id, ref_outs, seeds, stage, kernels, garbage_above)

    garbage_placed(monkeypatch, where)
    monkeypatch.setattr(Channel, "call_run", recording)
    honest_ok(run_check("relu", "honest_relu_triton"))
    per_run = runs[-1][2]
    timed = (RUN, Stage.TIME, per_run)
    in_place = [(GARBAGE, Stage.TIME, per_run), timed] if where == "first" else [timed, (GARBAGE, Stage.TIME, per_run)]
    # a run of each kind of checked set relu's reference accepts (large magnitude, sparse spikes, sparse
    # negatives, shifted down, rows apart, columns apart), put last here (garbage_placed)
    checked = [(RUN, Stage.TIME, per_run)] * 6
    assert runs[-13:] == [(GARBAGE, Stage.CHECK, 1), (RUN, Stage.TIME, 1), *in_place, *checked,
                          (SKIP, Stage.CHECK, per_run), (RAISE, Stage.CHECK, per_run), (SPOIL, Stage.CHECK, per_run)], runs


def test_a_kernel_scaling_pytorchs_output_by_one_is_caught():
    """Red-team pass 8: PyTorch computes the output, a kernel multiplies it by a one-element tensor
    holding 1.0. On garbage everywhere it writes garbage like an honest kernel; run again with its
    constant real, it passes the output's garbage on, so it gets the real output and the share
    still right convicts it (kernel_switch._identities)."""
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_noop_scale")
    assert_caught(r, "no_kernel")
    assert "scaling by ones" in finding(r, "no_kernel").message


@xfail("the scale of 1.0 sits in the last element of the tensor the kernel scales: no constant tensor is "
       "handed, so the run with the constants real does not happen, and on garbage the scale is garbage too")
def test_a_kernel_scaling_by_a_one_packed_beside_the_output_is_caught():
    r = run_check("softmax", "cheat_noop_scale_packed")
    with missed():
        assert r.status is not OK, (r.status, r.speedup_eager)


def garbage_placed(monkeypatch, where: str) -> None:
    """The work check's run on garbage put "first" or "last" among the timed stage's runs after the
    warm-up (rounds.garbage_place draws it at random), and the runs of checked sets after all
    of them (rounds.checked_place)."""
    from htam_engine.evaluate import rounds

    monkeypatch.setattr(rounds, "garbage_place", lambda timed_runs: 0 if where == "first" else timed_runs)
    monkeypatch.setattr(rounds, "checked_place", lambda runs: runs)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_candidate_counting_calls_to_the_timed_runs_is_caught(monkeypatch, where):
    """The judge's calls come in an order a config fixes: counting from the unseen-shape set's calls,
    cheat_count_timed let PyTorch do exactly the timed calls and met the work check's run on
    garbage, right after them, with its kernels (ok at PyTorch's speed). That run now takes the place
    of a timed run drawn at random, drawn, called and held as one: PyTorch on every run of the timed
    stage (cheat_count_timed_all) meets it wherever it falls, and the counted calls of old meet it
    where it falls on them."""
    garbage_placed(monkeypatch, where)
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_count_timed_all")
    assert_caught(r, "no_kernel")
    assert "run on garbage" in finding(r, "no_kernel").message
    if where == "first":
        r = run_check("softmax", "cheat_count_timed")
        assert_caught(r, "no_kernel")
        assert "run on garbage" in finding(r, "no_kernel").message


@xfail("PyTorch on some of the timed stage's runs is met by the run on garbage only where it falls on one of "
       "them: with R timed runs, PyTorch on k of the R + 1 escapes with probability (R + 1 - k) / (R + 1), "
       "and for k > R / 2 the median trial is PyTorch's (here R = 1: PyTorch on the first of the two runs, "
       "the run on garbage drawn last, one evaluation in two)")
def test_a_candidate_counting_calls_to_most_of_the_timed_runs_is_caught(monkeypatch):
    garbage_placed(monkeypatch, "last")
    r = run_check("softmax", "cheat_count_timed")
    with missed():
        assert r.status is not OK, (r.status, r.speedup_eager)


@pytest.mark.parametrize("candidate", ["cheat_cpp_op_python_impl", "cheat_cpp_python_callback"])
def test_python_run_inside_an_extension_is_caught(candidate):
    """Red-team pass 6: a C++-declared operator whose CPU kernel is a Python function, and a C++
    function calling back into Python, each computing softmax with PyTorch with the dispatch modes
    set aside, so the ATen watch saw nothing: the garbage run notes the candidate's Python run
    inside what the judge takes for a kernel."""
    r = run_check("softmax", candidate)
    assert_caught(r, "no_kernel")
    assert "ran the candidate's Python inside it" in finding(r, "no_kernel").message


@pytest.mark.parametrize("candidate", ["cheat_interp_escape", "cheat_interp_plain_arg", "cheat_interp_helper",
                                       "cheat_interp_rebind", "cheat_interp_int_subclass"])
def test_python_inside_an_interpreted_triton_kernel_is_refused(candidate):
    """On the CPU a Triton kernel runs through the interpreter as plain Python; each of these runs
    torch.softmax from inside one (a closure as a constexpr or a plain argument, a jit helper's
    body, a global rebound after the first launch, an int subclass whose __bool__ computes) and is
    refused as a GPU compile would refuse it (interpreter_guard): forward fails, never ok."""
    r = run_check("softmax", candidate)
    assert r.status is Status.RUNTIME_ERROR, (r.status, r.diagnostics.message)
    assert "compiled kernel" in r.diagnostics.message


@xfail("a cumulative product of values in [0, 1) is below KernelBench's atol (1e-4) after ~12 of 2,000 "
       "columns: zeros there pass every per-element rule and the whole-output bound (the head's norm), as "
       "they pass KernelBench's own check. Computing 32 columns is ok")
def test_a_kernel_skipping_values_below_the_tolerance_is_caught():
    honest_ok(run_check("cumprod", "honest_cumprod"))
    r = run_check("cumprod", "cheat_cumprod_truncated")
    with missed():
        assert r.status is not OK, (r.status, r.speedup_eager)
