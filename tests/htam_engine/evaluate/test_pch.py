"""The shared precompiled torch/extension.h: built once per flag set, used first, never in the way.

The fast tests run in their own cache folder; the end-to-end test builds the real header
(30-160 s on two cores) with the offline C++ proposer's flags, in the run's shared cache,
so the later engine/TUI tests that compile C++ candidates with those flags reuse it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from htam_engine.evaluate import compile_cache, pch
from htam_engine.evaluate.evaluator import Evaluator
from htam_engine.evaluate.result import Status
from htam_engine.propose.offline.cpp import CFLAGS

from harness_core_support import FUSED_CPP, fast_config

needs_gcc = pytest.mark.skipif(pch._compiler() is None, reason="precompiled headers need gcc on Linux")


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(pch.ENV_SWITCH, raising=False)
    monkeypatch.delenv(pch.AFTER_ENV, raising=False)
    return tmp_path


def _failing_build(header, output, extra_cflags, with_cuda):
    """A compiler command that fails at once, standing in for a header that cannot be built."""
    return [pch._compiler()[0], "-x", "c++-header", "/nonexistent/htam.h", "-o", str(output)]


def test_switched_off_leaves_the_build_alone(own_cache, monkeypatch):
    monkeypatch.setenv(pch.ENV_SWITCH, "0")
    assert pch.shared_folder(("-O3",), False) is None
    assert pch.wanted(["-O3"], False, "ext_a") is False
    args = {"name": "ext_a", "cpp_sources": "int f();", "extra_include_paths": ["/x"]}
    compile_cache._use_shared_pch(args, None)
    assert args["extra_include_paths"] == ["/x"]
    assert not (own_cache / "pch").exists()


@needs_gcc
def test_the_sandbox_asks_and_the_judge_builds_for_a_recurring_flag_set(own_cache, monkeypatch):
    calls = []
    monkeypatch.setattr(pch, "build_command", lambda *a: calls.append(a) or _failing_build(*a))
    args = {"name": "ext_a", "cpp_sources": "int f();", "extra_cflags": ["-O2"], "extra_include_paths": "/own"}
    asked = []
    compile_cache._use_shared_pch(args, lambda *request: asked.append(request))  # the sandbox's side
    folder = Path(args["extra_include_paths"][0])
    assert args["extra_include_paths"][1:] == ["/own"]
    assert asked == [(("-O2",), False, "ext_a")]
    assert not folder.exists()  # the sandbox wrote nothing there
    built = []
    assert not pch.wanted(["-O2"], False, "ext_a", lambda: built.append(1))  # the judge's side
    # The folder holds the real header under the name the candidate includes.
    assert (folder / "torch" / "extension.h").resolve().name == "extension.h"
    assert (folder / "torch" / "extension.h").read_bytes()
    assert calls == [] and built == []  # first extension with these flags: nothing built
    assert not pch.wanted(["-O2"], False, "ext_a", lambda: built.append(1))
    assert calls == []  # the same extension again does not count twice
    assert pch.wanted(["-O2"], False, "ext_b", lambda: built.append(1))
    assert len(calls) == 1 and built == [1]  # the build was announced, then done
    compile_cache._use_shared_pch({"name": "ext_c", "cpp_sources": "", "extra_cflags": ["-O2"]},
                                  lambda *request: asked.append(request))
    assert asked[-1] == (("-O2",), False, "ext_c")  # asked again, settled or not: the judge checks the link
    assert not pch.wanted(["-O2"], False, "ext_c", lambda: built.append(1)) and len(calls) == 1


@needs_gcc
@pytest.mark.parametrize("flags", [["-fplugin=/tmp/x.so"], ["-O2", "-wrapper", "/bin/sh"], ["@/tmp/flags"],
                                   ["-include", "/tmp/evil.h"], ["-Wp,-include,/tmp/evil.h"], ["-B/tmp"],
                                   ["-specs=/tmp/s"], ["-O3 -ffast-math"], [3]])
def test_the_judge_runs_gcc_with_no_flag_outside_the_safe_forms(own_cache, monkeypatch, flags):
    """The judge runs gcc with the flags a sandbox names: a flag that would have gcc load, run or
    read a file of the candidate's choosing in the judge's process gets that flag set no header
    (and its build no shared folder)."""
    monkeypatch.setenv(pch.AFTER_ENV, "1")
    monkeypatch.setattr(pch, "build_command", lambda *a: pytest.fail(f"gcc run with {a[2]}"))
    assert pch.flag_set(flags) is None
    assert pch.wanted(flags, False, "ext_a") is False
    args = {"name": "ext_a", "cpp_sources": "", "extra_cflags": flags}
    compile_cache._use_shared_pch(args, lambda *request: pytest.fail("asked"))
    assert "extra_include_paths" not in args


def test_the_offline_proposers_flags_are_safe_forms():
    from htam_engine.propose.offline import cpp, cuda

    for flags in (cpp.CFLAGS, cpp.FAST_CFLAGS, cuda.CFLAGS):
        assert pch.flag_set(flags) == tuple(flags)
    assert pch.flag_set(["-O3", "-march=native", "-ffast-math", "-DN=4", "-std=c++17", "-Wno-unused"]) is not None


@needs_gcc
def test_a_name_that_is_not_a_module_name_is_not_filed(own_cache, monkeypatch):
    monkeypatch.setenv(pch.AFTER_ENV, "1")
    monkeypatch.setattr(pch, "build_command", lambda *a: pytest.fail("built"))
    assert pch.wanted(["-O1"], False, "../../escape") is False
    assert not list(own_cache.rglob("escape"))


@needs_gcc
def test_failed_build_falls_back_and_is_not_retried(own_cache, monkeypatch):
    monkeypatch.setenv(pch.AFTER_ENV, "1")
    calls = []
    monkeypatch.setattr(pch, "build_command", lambda *a: calls.append(a) or _failing_build(*a))
    assert pch.wanted(["-O1"], False, "ext_a")
    assert not pch.wanted(["-O1"], False, "ext_b")
    first = pch.shared_folder(("-O1",), False)
    assert len(calls) == 1
    assert "htam.h" in (first / "failed.txt").read_text()
    assert not (first / "torch" / "extension.h.gch").exists()
    assert not [p for p in (first / "torch").iterdir() if p.name.endswith(".tmp")]


def _built_sets(root: Path, seen: list[int]) -> list[Path]:
    """Flag-set folders holding a .gch, each asked for by seen[i] distinct extensions."""
    folders = []
    for i, n in enumerate(seen):
        folder = root / "pch" / f"set{i}"
        (folder / "torch").mkdir(parents=True)
        (folder / "torch" / "extension.h.gch").write_bytes(b"")
        (folder / "seen").mkdir()
        for j in range(n):
            (folder / "seen" / f"ext_{j}").touch()
        folders.append(folder)
    return folders


@needs_gcc
def test_flag_sets_beyond_the_cap_get_no_header_while_every_built_one_is_asked_for_as_often(own_cache, monkeypatch):
    monkeypatch.setenv(pch.AFTER_ENV, "1")
    built = _built_sets(own_cache, [2] * pch.MAX_FLAG_SETS)
    monkeypatch.setattr(pch, "build_command", lambda *a: pytest.fail("built past the cap"))
    pch.wanted(["-O1", "-g0"], False, "ext_a")
    pch.wanted(["-O1", "-g0"], False, "ext_b")
    folder = pch.shared_folder(("-O1", "-g0"), False)
    assert folder is not None and not (folder / "torch" / "extension.h.gch").exists()
    assert not (folder / "failed.txt").exists()  # not given up on: weighed again when asked again
    assert all((f / "torch" / "extension.h.gch").exists() for f in built)


@needs_gcc
def test_a_flag_set_asked_for_more_takes_the_slot_of_the_least_asked_for(own_cache, monkeypatch):
    """Eight slots taken, one by a flag set asked for once (a candidate's junk -D): the first flag
    set asked for more often than that gets its header in that slot."""
    monkeypatch.setenv(pch.AFTER_ENV, "1")
    junk, *kept = _built_sets(own_cache, [1] + [5] * (pch.MAX_FLAG_SETS - 1))
    monkeypatch.setattr(pch, "build_command", lambda header, output, *a: ["touch", str(output)])
    folder = pch.shared_folder(("-O1", "-g0"), False)
    pch.wanted(["-O1", "-g0"], False, "ext_a")  # asked for once, as often as the junk: no slot yet
    assert not (folder / "torch" / "extension.h.gch").exists()
    pch.wanted(["-O1", "-g0"], False, "ext_b")
    assert (folder / "torch" / "extension.h.gch").exists()
    assert not (junk / "torch" / "extension.h.gch").exists()
    assert all((f / "torch" / "extension.h.gch").exists() for f in kept)


def _cpp_candidate(tag: str) -> str:
    """The honest fused C++ candidate, as a distinct source with the offline proposer's flags."""
    code = FUSED_CPP.replace('extra_cflags=["-O3", "-fno-trapping-math"]', f"extra_cflags={CFLAGS!r}")
    assert code != FUSED_CPP
    return code.replace("torch::Tensor scale_shift_relu(", f"// {tag}\ntorch::Tensor scale_shift_relu(", 1)


@needs_gcc
def test_cpp_candidates_build_with_the_shared_header_built_once(small_problem, monkeypatch):
    monkeypatch.setenv(pch.AFTER_ENV, "1")  # build it for the first candidate already
    monkeypatch.delenv(pch.ENV_SWITCH, raising=False)
    folder = Path(os.environ["HTAM_CACHE_DIR"]) / "pch" / pch.pch_key(tuple(CFLAGS), False)
    gch = folder / "torch" / "extension.h.gch"
    before = gch.stat().st_mtime_ns if gch.exists() else None
    ev = Evaluator("cpu")  # started after the switch is set: the worker inherits it
    try:
        stages: list[str] = []
        first = ev.evaluate(small_problem, _cpp_candidate(f"pch-a-{os.getpid()}"), fast_config(timeout_s=300),
                            on_progress=lambda stage, _t: stages.append(stage))
        assert first.status is Status.OK, (first.diagnostics.message, first.diagnostics.log[-2000:])
        assert gch.exists() and not (folder / "failed.txt").exists()
        built = gch.stat().st_mtime_ns
        if before is None:  # this run built it, in its own stage between two compile stages
            assert stages.index("compile") < stages.index("pch") < len(stages) - 1 - stages[::-1].index("compile")
        second_stages: list[str] = []
        second = ev.evaluate(small_problem, _cpp_candidate(f"pch-b-{os.getpid()}"), fast_config(timeout_s=300),
                             on_progress=lambda stage, _t: second_stages.append(stage))
    finally:
        ev.close()
    assert second.status is Status.OK, second.diagnostics.message
    assert "pch" not in second_stages and gch.stat().st_mtime_ns == built  # reused, not rebuilt
    # gcc took the precompiled header: with it, the depfile of the host unit no longer lists
    # the header (gcc lists an included header it read, not one it took precompiled).
    builds = [b.parent for b in Path(os.environ["HTAM_CACHE_DIR"], "build").glob("*/scale_shift_relu_*/build.ninja")
              if f"-I{folder}" in b.read_text()]
    assert len(builds) >= 2
    for build in builds:
        # the header is precompiled with the C++ standard torch's own build file gives gcc
        assert f"{pch.cxx_std_flag()} " in (build / "build.ninja").read_text()
        deps = (build / ".ninja_deps").read_bytes()
        assert b"main.o" in deps and str(folder / "torch" / "extension.h").encode() not in deps
