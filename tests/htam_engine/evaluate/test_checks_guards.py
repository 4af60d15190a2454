"""Guards: kernel counting, what verify() reports, and a clean uninstall."""

from __future__ import annotations

import os
import threading
import time

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from cheats.harness import restored  # noqa: E402
from htam_engine.evaluate.checks import install_guards  # noqa: E402


@pytest.fixture
def guards():
    with restored():
        g = install_guards("cpu")
        yield g
        g.uninstall()


def test_install_is_idempotent_and_uninstall_restores_everything():
    import torch.utils.cpp_extension as ce
    import triton.runtime.jit as jit

    loader, run, start = ce._import_module_from_library, jit.JITFunction.run, threading.Thread.start
    g = install_guards("cpu")
    assert install_guards("cpu") is g
    assert ce._import_module_from_library is not loader and jit.JITFunction.run is not run
    g.uninstall()
    assert ce._import_module_from_library is loader and jit.JITFunction.run is run
    assert threading.Thread.start is start
    assert install_guards("cpu") is not g  # a fresh install after uninstall
    install_guards("cpu").uninstall()


def test_triton_launches_are_counted_warmup_and_failures_are_not(guards):
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    x = torch.zeros(100)
    before = guards.kernel_calls
    add_one[(1,)](x, 100, BLOCK=128)
    add_one[(1,)](x, 100, BLOCK=128)
    with pytest.raises(Exception):
        add_one[(1,)](x, BLOCK=128)  # missing argument
    assert guards.kernel_calls - before == 2 and guards.triton_launches >= 2
    assert float(x[0]) == 2.0


def test_extension_module_functions_are_counted_in_place(guards):
    # A stand-in for a load_inline module (building a real one is the C++ test's job).
    import math
    import types

    from htam_engine.evaluate.checks.guards import _instrument_module

    module = types.ModuleType("ext")
    module.sqrt = math.sqrt
    _instrument_module(module, guards._counter)
    _instrument_module(module, guards._counter)  # a second pass must not double-count
    before = guards.kernel_calls
    assert module.sqrt(9.0) == 3.0
    with pytest.raises(ValueError):
        module.sqrt(-1.0)
    assert guards.kernel_calls - before == 1 and guards.extension_calls >= 1


def test_a_clean_process_verifies_clean(guards):
    assert guards.verify() == []


def test_patched_timers_sync_and_settings_are_reported(guards):
    time.perf_counter = lambda: 0.0
    torch.cuda.synchronize = lambda *a: None
    torch.set_num_threads(max(1, torch.get_num_threads() - 1) if torch.get_num_threads() > 1 else 2)
    found = {f.rule: f.message for f in guards.verify()}
    assert "time.perf_counter" in found["timer_tamper"]
    assert "torch.cuda.synchronize" in found["sync_tamper"]
    assert "torch.get_num_threads()" in found["global_setting"]


def test_patched_harness_functions_are_reported(guards):
    import htam_engine.evaluate.checks.compare as compare

    original = compare.compare_outputs
    try:
        compare.compare_outputs = lambda *a, **k: None
        found = guards.verify()
    finally:
        compare.compare_outputs = original
    assert any(f.rule == "harness_tamper" and "compare_outputs" in f.message for f in found)


def test_threads_started_from_candidate_code_are_strays_harness_threads_are_not(guards):
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="from-a-test-file")  # this file is not harness code
    t.start()
    try:
        assert [s.name for s in guards.stray_threads()] == ["from-a-test-file"]
        assert any(f.rule == "background_thread" for f in guards.verify())
    finally:
        stop.set()
        t.join()
    assert guards.verify() == []


def test_trusted_section_accepts_what_harness_work_changes(guards):
    stop = threading.Event()
    gelu = torch.nn.functional.gelu
    time.time = lambda: 0.0  # before the section: stays reported
    with guards.trusted():
        t = threading.Thread(target=stop.wait)
        t.start()
        torch.nn.functional.gelu = lambda *a, **k: gelu(*a, **k)  # as a compile baseline might
    try:
        assert [f.rule for f in guards.verify()] == ["timer_tamper"]
    finally:
        stop.set()
        t.join()
        torch.nn.functional.gelu = gelu


def test_torch_wrapping_its_own_functions_is_not_tampering(guards):
    import functools

    original = torch.nn.functional.relu
    torch_dir = os.path.dirname(torch.__file__)
    # A wrapper whose code lives in torch's package and wraps the original: as dynamo does.
    src = "import functools\ndef wrap(f):\n    @functools.wraps(f)\n    def inner(*a, **k):\n        return f(*a, **k)\n    return inner\n"
    ns: dict = {}
    exec(compile(src, os.path.join(torch_dir, "_compile.py"), "exec"), ns)
    try:
        torch.nn.functional.relu = ns["wrap"](original)
        assert guards.verify() == []
        torch.nn.functional.relu = functools.wraps(original)(lambda *a, **k: original(*a, **k))
        assert any(f.rule == "torch_tamper" for f in guards.verify())
    finally:
        torch.nn.functional.relu = original


def test_dynamo_patching_module_init_for_a_compile_baseline_is_not_tampering(guards):
    # What a torch.compile of the reference does to nn.Module (without paying for a compile).
    from torch._dynamo.mutation_guard import install_generation_tagging_init

    init, setstate = torch.nn.Module.__init__, torch.nn.Module.__setstate__
    try:
        install_generation_tagging_init()
        assert torch.nn.Module.__init__ is not init
        assert guards.verify() == []
    finally:
        torch.nn.Module.__init__, torch.nn.Module.__setstate__ = init, setstate


def _reference_forward_starting_a_thread(stop: threading.Event) -> threading.Thread:
    t = threading.Thread(target=stop.wait)
    t.start()
    return t


def test_threads_started_under_the_reference_code_are_trusted(guards):
    stop = threading.Event()
    guards.trust_code_of(_reference_forward_starting_a_thread)  # as check_candidate does for Model
    t = _reference_forward_starting_a_thread(stop)
    try:
        assert guards.stray_threads() == []
    finally:
        stop.set()
        t.join()


def test_cuda_checks_import_candidates_with_compiled_triton_kernels():
    # Under the interpreter a side stream's work is finished (copied back to the device
    # synchronously) before forward returns: the CUDA checks must see real GPU kernels.
    import triton.runtime.jit as jit

    from cheats.harness import candidate_path, import_candidate

    gpu = import_candidate(candidate_path("cheat_side_stream"), "cuda")
    cpu = import_candidate(candidate_path("cheat_side_stream"), "cpu")
    assert type(gpu.relu_kernel) is jit.JITFunction
    assert type(cpu.relu_kernel) is not jit.JITFunction and os.environ["TRITON_INTERPRET"] == "1"
