"""A sandbox's Landlock ruleset (landlock.py), installed in a forked child as the zygote does in a
sandbox, then an evaluation's sandbox seen from outside: what a candidate could write."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from cheats.harness import in_forked_child, run_check
from htam_engine.evaluate import landlock
from htam_engine.evaluate.cache import cache_dir
from htam_engine.evaluate.result import Status

ABI = landlock.abi_version()
pytestmark = pytest.mark.skipif(ABI == 0, reason="this kernel has no Landlock")


def _attempts(own: str, elsewhere: str) -> dict:
    """In the child: restrict, then try each write; which ones the kernel let through."""
    # another process of this user, outside the ruleset (which may not signal it: it ends at its input's end)
    other = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
    refused = landlock.install([own])
    done: dict = {"install": refused}

    def attempt(name: str, fn) -> None:
        try:
            fn()
            done[name] = True
        except OSError:
            done[name] = False

    def write(path: str) -> None:
        with open(path, "w") as f:
            f.write("x")

    attempt("own file", lambda: write(os.path.join(own, "a.txt")))
    attempt("own folder", lambda: os.makedirs(os.path.join(own, "sub", "deeper")))
    attempt("elsewhere", lambda: write(os.path.join(elsewhere, "planted.txt")))
    attempt("remove elsewhere", lambda: os.unlink(os.path.join(elsewhere, "kept.txt")))
    attempt("/dev/null truncated", lambda: write("/dev/null"))  # a shell's `> /dev/null` opens it with O_TRUNC
    attempt("signal outside", lambda: os.kill(os.getppid(), 0))
    # a thread started now named as the GPU driver names its own (cuInit fails with error 304 if refused)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(30,))
    thread.start()
    attempt("own thread named", lambda: write(f"/proc/self/task/{thread.native_id}/comm"))
    stop.set()
    thread.join()
    attempt("another process's oom score", lambda: write(f"/proc/{other.pid}/oom_score_adj"))
    other.communicate()
    return done


def test_a_restricted_process_writes_only_beneath_its_folders(tmp_path):
    own, elsewhere = tmp_path / "own", tmp_path / "elsewhere"
    own.mkdir()
    elsewhere.mkdir()
    (elsewhere / "kept.txt").write_text("kept")
    done = in_forked_child(lambda: _attempts(str(own), str(elsewhere)))
    assert done.pop("install") is None
    assert done.pop("signal outside") is (ABI < 6)  # signals are scoped from ABI 6 on
    assert done == {"own file": True, "own folder": True, "elsewhere": False, "remove elsewhere": False,
                    "/dev/null truncated": True, "own thread named": True, "another process's oom score": False}
    assert not (elsewhere / "planted.txt").exists() and (elsewhere / "kept.txt").read_text() == "kept"


def test_a_candidate_cannot_write_outside_its_sandboxs_folders():
    """cheat_write_outside, an honest ReLU otherwise, tries at import to plant files where a sandbox
    has no business: the cache's root (beside the folders a build writes, cache.SANDBOX_WRITABLE),
    the temporary folder shared with every other sandbox of the machine (their compile caches), and
    the user's home. Every one is refused; its own build (into the cache's folders) goes on and its
    verdict is an honest candidate's."""
    name = "htam-planted-by-a-candidate.txt"
    planted = [cache_dir() / "planted-by-a-candidate.txt", Path(tempfile.gettempdir()) / name, Path.home() / name]
    try:
        r = run_check("relu", "cheat_write_outside")
        assert r.status is Status.OK, (r.status, r.diagnostics.message)
        assert not [p for p in planted if p.exists()]
    finally:
        for p in planted:
            p.unlink(missing_ok=True)


def test_a_candidate_names_its_threads_as_the_gpu_driver_does():
    """In a real sandbox (the zygote's fork, its descriptors closed but the hold on its /proc
    folder), a thread started by the candidate is named through /proc/self/task: the GPU driver's
    cuInit does so, and failed with error 304 under the ruleset without its own /proc files."""
    r = run_check("relu", "honest_names_its_threads")
    assert r.status is Status.OK, (r.status, r.diagnostics.message)


def test_install_names_why_where_the_kernel_has_none(monkeypatch):
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    assert landlock.install(["/tmp"]) == "the kernel has no Landlock"


def test_signals_to_other_sandboxes_are_refused_from_abi_6():
    if ABI < 6:
        pytest.skip("signals are scoped from Landlock ABI 6 on")

    def stop_parent() -> dict:
        landlock.install([])
        try:
            os.kill(os.getppid(), signal.SIGSTOP)
            return {"stopped": True}
        except PermissionError:
            return {"stopped": False}

    assert in_forked_child(stop_parent) == {"stopped": False}


def test_a_site_can_turn_it_off(monkeypatch):
    """sandbox_confine_writes off (HTAM_SANDBOX_CONFINE_WRITES=0): the sandbox writes wherever its user
    may, as before Landlock (for a site where a compiler must write elsewhere)."""
    monkeypatch.setenv("HTAM_SANDBOX_CONFINE_WRITES", "0")
    planted = cache_dir() / "planted-by-a-candidate.txt"
    try:
        r = run_check("relu", "cheat_write_outside")
        assert r.status is Status.OK, (r.status, r.diagnostics.message)
        assert planted.exists()
    finally:
        for p in (planted, Path(tempfile.gettempdir()) / "htam-planted-by-a-candidate.txt",
                  Path.home() / "htam-planted-by-a-candidate.txt"):
            p.unlink(missing_ok=True)
