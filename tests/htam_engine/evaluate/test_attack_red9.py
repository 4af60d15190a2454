"""Cheats of a ninth red-team pass (CPU, softmax): the work check passed by a forward that raises on
every one of its runs, told apart by a tensor's version counter or by a profile hook on the launch,
and PyTorch's work undone in place by a kernel; one rounded copy that is caught.

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and its
class). A cheat the judge catches is asserted caught with the rule it was seen under; one that gets
through is xfail(strict=True) with what the judge misses, its honest counterpart shown ok beside
it, so the test flips when the judge learns to catch it.
"""

from __future__ import annotations

import pytest

from cheats.caught import assert_caught
from cheats.harness import finding, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok, missed, xfail

OK = Status.OK

MISSED = {
    "cheat_undo_scale_inplace": (
        "PyTorch computes the softmax times 3 and a kernel divides it by 3 in place: skipped or spoiled the "
        "output is wrong, on garbage the kernel writes the one tensor it was handed (no copy, no constant), so "
        "every run says the kernel did the work. Ok at 0.0045x against the honest 0.007x on the CPU (the "
        "interpreted division is no faster than the interpreted softmax there; on a GPU it is one pass)"),
}


@pytest.mark.parametrize("cheat", [pytest.param(name, marks=xfail(reason)) for name, reason in MISSED.items()])
def test_work_check_cheats_of_pass_9_are_caught(cheat):
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", cheat)
    with missed():
        assert r.status is not OK, (r.status, r.speedup_eager)


@pytest.mark.parametrize("cheat", ["cheat_probe_version", "cheat_probe_profiler"])
def test_a_probe_telling_the_work_check_by_its_version_counter_or_a_profile_hook_is_caught(cheat):
    """The switch writes the tensors a kernel was handed through an alias with a version counter of
    its own (kernel_switch._alias), so a flag's _version moves on no call; and every launch turns the
    candidate's profile and trace hooks off until it returns (_hooks_off), so a hook sees the same
    below a launch in every mode. Either probe then answers every call as real: PyTorch's right
    output on the run on garbage convicts it."""
    r = run_check("softmax", cheat)
    assert_caught(r, "no_kernel")
    assert "run on garbage" in finding(r, "no_kernel").message


def test_a_forward_raising_on_the_work_checks_calls_is_caught():
    """A forward that checks its own output and raises where it is wrong raised on every run of the
    work check, each read as nothing learned: a raise on garbage, where every checked call returned,
    now convicts (sequence.CheckRun._raised_on_garbage)."""
    r = run_check("softmax", "cheat_validate_and_raise")
    assert_caught(r, "no_kernel")
    assert "forward raised with every custom kernel run on garbage" in finding(r, "no_kernel").message


def test_a_copy_rounded_by_a_multiply_and_a_divide_into_a_fresh_buffer_is_caught():
    """(t * 3) / 3 is no bit-for-bit copy, but the fresh buffer holds the sandbox's poison marker, a
    constant, so the run with the constants real finds the kernel passing the softmax on."""
    r = run_check("softmax", "cheat_lossy_copy")
    assert_caught(r, "no_kernel")
    assert "run on garbage" in finding(r, "no_kernel").message
