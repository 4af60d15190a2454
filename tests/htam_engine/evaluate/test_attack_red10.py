"""Cheats of a tenth red-team pass (CPU): poisoning through the private compile caches of the
sandboxes beside a candidate's (the spare sandbox forked for the next candidate, another judge's
reference sandbox), found by listing the shared temporary folder, and a forged out-of-memory
message that the work check excuses.

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and its
class). A cheat that gets through is xfail(strict=True) with what the judge misses, its honest
counterpart shown ok beside it, so the test flips when the judge learns to catch it.

The compile-cache cheats write into every sandbox folder they find in the zygote's temporary
folder: each test points TMPDIR (which the judges' sandboxes inherit) at a folder of its own, so
they reach only the judges the test made.
"""

from __future__ import annotations

import threading

import pytest

from cheats.harness import run_check
from cheats.isolated import isolated_judge
from htam_engine.evaluate.result import Status
from test_attack_new import honest_ok

OK = Status.OK


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """A temporary folder of this test's own for the judges it makes (their zygotes' mkdtemp)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def test_a_wrapper_planted_in_the_spare_sandboxs_private_cache_does_not_change_the_next_result(own_tmp):
    """The spare sandbox forked for the next candidate had its compile caches in the shared temporary
    folder while this candidate ran: an inductor wrapper planted there (the product times 1.5) made
    the next honest torch.compile candidate INCORRECT (131,123 of 262,144 elements off). A sandbox
    now compiles into a folder it makes when its first request arrives, what was there before
    removed (zygote.renew_private_compile_caches)."""
    with isolated_judge(own_tmp.parent / "judge") as j:
        honest_ok(j.run("matmul_relu", "honest_compiled_matmul_relu"))
        honest_ok(j.run("matmul_relu", "cheat_spare_private_cache"))  # an honest candidate itself
        after = j.run("matmul_relu", "honest_compiled_matmul_relu")
    assert after.status is OK, (after.status, after.diagnostics.message)


def test_a_wrapper_planted_in_another_judges_reference_cache_does_not_slow_its_compile_baseline(own_tmp):
    """A judge's reference sandbox compiles the torch.compile baseline in a folder it made when it
    loaded the problem, while that judge's candidate is stopped, but a candidate of another judge on
    the machine (htam batch --jobs N) is not, and every sandbox is a process of one user: the cheat
    watches the shared temporary folder for a new htam-reference-compile-* folder and writes a wrapper
    slowed by 20 ms there under the hash inductor will look for. The other judge's honest ReLU had a
    torch.compile baseline of 20.5 ms against 0.05 ms (speedup_compile 12.7x against 0.03x), and 13.5x
    again on its next evaluation; no finding. A sandbox now writes only beneath its own folders
    (landlock.py): the writes are refused."""
    with isolated_judge(own_tmp.parent / "clean") as j:
        clean = j.run("relu", "honest_relu_triton", time_compile_baseline=True)
    honest_ok(clean)
    assert clean.compile_ref_runtime_ms is not None and clean.compile_ref_runtime_ms < 10.0, clean.compile_ref_runtime_ms
    with isolated_judge(own_tmp.parent / "a") as a, isolated_judge(own_tmp.parent / "b") as b:
        cheat: dict = {}
        beside = threading.Thread(target=lambda: cheat.update(
            r=a.run("relu", "cheat_reference_private_cache", time_compile_baseline=True)))
        beside.start()
        try:
            threading.Event().wait(12.0)  # the cheat compiles at import (~10 s here), then watches
            honest = b.run("relu", "honest_relu_triton", time_compile_baseline=True)
        finally:
            beside.join()
    honest_ok(honest)
    # Unpoisoned, compiled ReLU on 4 x 256 takes well under a millisecond here; the poison adds 20.
    assert honest.compile_ref_runtime_ms is not None and honest.compile_ref_runtime_ms < 10.0, (
        honest.compile_ref_runtime_ms, honest.speedup_compile)


def test_a_forged_out_of_memory_message_on_the_work_checks_runs_gets_no_verdict():
    """A forward raising 'CUDA out of memory' on the work check's runs, its kernel doing 0.8 % of the
    softmax, was ok (0.030x against the honest 0.009x): the message excused the raise. An
    out-of-memory on garbage is now no verdict either way (the harness's error, run again alone in
    a pool), never ok."""
    honest, forged = (run_check("softmax", name) for name in ("honest_softmax", "cheat_oom_message"))
    honest_ok(honest)
    assert forged.status is Status.HARNESS_ERROR, (forged.status, forged.speedup_eager, forged.diagnostics.message)
    assert "the run on garbage ran out of memory" in forged.diagnostics.message
