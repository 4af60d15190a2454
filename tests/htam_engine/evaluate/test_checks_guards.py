"""Inside a sandbox: the kernel switch (counting, skipping, raising) and the guards' early findings.

These run in this process, installed and uninstalled around each test, as a sandbox installs
them before it imports a candidate.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

import msgpack  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import htam_engine.evaluate.timing as timing  # noqa: E402 - loaded before the guards snapshot the harness
from htam_engine.evaluate.checks.guards import install_guards  # noqa: E402
from htam_engine.evaluate.kernel_switch import KernelsDisabled, KernelSwitch  # noqa: E402


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@pytest.fixture
def switch():
    s = KernelSwitch().install()
    yield s
    s.uninstall()


@pytest.fixture
def guards():
    saved = {k: v for k, v in vars(time).items()}
    threads = torch.get_num_threads()
    g = install_guards("cpu")
    yield g
    g.uninstall()
    for k, v in saved.items():
        setattr(time, k, v)
    torch.set_num_threads(threads)


def test_triton_launches_are_counted_warmup_and_failures_are_not(switch):
    x = torch.zeros(100)
    add_one[(1,)](x, 100, BLOCK=128)
    add_one[(1,)](x, 100, BLOCK=128)
    with pytest.raises(Exception):
        add_one[(1,)](x, BLOCK=128)  # missing argument
    assert switch.launches == 2 and float(x[0]) == 2.0


def test_skipped_launches_write_nothing_but_a_broken_one_still_fails(switch):
    x = torch.zeros(100)
    with switch.switched("skip"):
        add_one[(1,)](x, 100, BLOCK=128)
        with pytest.raises(Exception):  # so a try/except around a broken kernel still falls back
            add_one[(1,)](x, BLOCK=128)
    assert float(x.abs().sum()) == 0.0 and switch.launches == 0
    with switch.switched("raise"), pytest.raises(KernelsDisabled):
        add_one[(1,)](x, 100, BLOCK=128)
    add_one[(1,)](x, 100, BLOCK=128)  # back on after the block
    assert float(x[0]) == 1.0


def test_extension_functions_are_gated_in_place(switch):
    # A stand-in for a load_inline module (building a real one is the C++ tests' job).
    import types

    def relu_out(x, out):
        out.copy_(x.clamp_min(0))
        return out * 2

    module = types.ModuleType("ext")
    module.relu_out = relu_out
    switch.instrument(module)
    switch.instrument(module)  # a second pass must not wrap twice
    x, out = torch.tensor([-1.0, 2.0]), torch.zeros(2)
    assert module.relu_out(x, out).tolist() == [0.0, 4.0] and switch.launches == 1
    out.zero_()
    with switch.switched("skip"):
        doubled = module.relu_out(x, out)
    # What it returned and the argument it wrote are garbage; the input it only read is not.
    assert torch.isnan(doubled).all() and torch.isnan(out).all() and x.tolist() == [-1.0, 2.0]
    with switch.switched("raise"), pytest.raises(KernelsDisabled):
        module.relu_out(x, out)


def test_spoiled_launches_write_nothing_and_spoil_every_tensor_they_were_handed(switch):
    # The work check's third call: what a kernel was handed (a view of a row here) is NaN after
    # it, the rest untouched, so PyTorch's share of an output shows as what is still right.
    x = torch.arange(8.0).reshape(2, 4)
    with switch.switched("spoil"):
        add_one[(1,)](x[1], 4, BLOCK=4)
    assert x[0].tolist() == [0.0, 1.0, 2.0, 3.0] and torch.isnan(x[1]).all() and switch.launches == 0
    import types

    module = types.ModuleType("ext")
    module.scale = lambda a, b: a * 2  # reads both, writes neither
    switch.instrument(module)
    a, b = torch.ones(3), torch.ones(3)
    with switch.switched("spoil"):
        out = module.scale(a, b)
    assert torch.isnan(out).all() and torch.isnan(a).all() and torch.isnan(b).all()


@triton.jit
def flag_and_double(flag_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Writes 1 to a flag (whatever it reads) and 2x into y."""
    offs = tl.arange(0, BLOCK)
    tl.store(flag_ptr, 1.0)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


@triton.jit
def clean_in_place(flag_ptr, x_ptr, n, BLOCK: tl.constexpr):
    """Writes 1 to a flag and rewrites x in place with NaN made 0: the identity on real inputs."""
    offs = tl.arange(0, BLOCK)
    tl.store(flag_ptr, 1.0)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.where(v == v, v, 0.0), mask=offs < n)


def test_a_kernel_run_on_garbage_computes_garbage_and_what_it_did_not_write_is_put_back(switch):
    # The work check's garbage call: the kernel runs on its grid with what it was handed
    # overwritten, so a write that does not depend on what it reads (the flag) lands, what it
    # computes from its inputs is garbage, and the input it only read is as it was afterwards.
    flag, x, y = torch.zeros(1), torch.arange(4.0), torch.full((4,), 7.0)
    with switch.switched("garbage"):
        flag_and_double[(1,)](flag, x, y, 4, BLOCK=4)
    assert float(flag) == 1.0 and x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.isfinite(y).all() and not torch.allclose(y, 2 * x)  # twice the garbage it read
    assert switch.launches == 0
    # Integers get values between their least and greatest (an index stays in bounds), put back the same way.
    idx = torch.tensor([3, 1], dtype=torch.int64)
    import types

    module = types.ModuleType("ext")
    # an extension function reading both, computing out of ATen's sight as C++ would (through ATen,
    # the work check's watch replays its operators on the real values: aten_watch)
    module.gather = lambda src, index: torch.from_numpy(src.numpy()[index.numpy()] + 1)
    switch.instrument(module)
    src = torch.tensor([10.0, 20.0, 30.0, 40.0])
    with switch.switched("garbage"):
        out = module.gather(src, idx)
    assert out.tolist() != [41.0, 21.0] and idx.tolist() == [3, 1] and src.tolist() == [10.0, 20.0, 30.0, 40.0]


def test_a_kernel_rewriting_its_input_as_it_was_cannot_keep_the_garbage(switch):
    """The garbage looks like real values, so a kernel that writes back what it read (NaN made 0,
    the identity on real inputs) leaves it as drawn, and it is put back: PyTorch reading that
    input afterwards finds it as it was."""
    flag, x = torch.zeros(1), torch.randn(64)
    before = x.clone()
    with switch.switched("garbage"):
        clean_in_place[(1,)](flag, x, 64, BLOCK=64)
    assert float(flag) == 1.0 and torch.equal(x, before)


@triton.jit
def relu_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.maximum(v, 0.0), mask=offs < n)


def test_a_tensor_a_kernel_wrote_anything_into_stays_as_the_kernel_left_it(switch):
    """An honest in-place ReLU on positive inputs writes back most of what it read; were those
    elements put back, it would hand back the right output on garbage and look like PyTorch's."""
    x = torch.rand(256)
    before = x.clone()
    with switch.switched("garbage"):
        relu_in_place[(1,)](x, 256, BLOCK=256)
    assert float((x == before).float().mean()) < 0.5  # relu of the garbage, not the input it was handed


def test_a_garbage_run_holds_no_tensors_garbage_beside_another_draw(switch, monkeypatch):
    """Beside the kernel's tensors the garbage run keeps one copy of them (to put back): each
    tensor's garbage is dropped once written and drawn again to compare with, so a launch handed
    close to GARBAGE_MAX_BYTES adds that much to the sandbox's peak, not twice that."""
    import weakref

    from htam_engine.evaluate import kernel_switch

    real, alive, draws = kernel_switch._garbage_recipe, [], []

    def recipe(t):
        draw = real(t)

        def tracked(generator, shape):
            g = draw(generator, shape)
            alive[:] = [r for r in alive if r() is not None]
            draws.append(len(alive))
            alive.append(weakref.ref(g))
            return g
        return tracked

    monkeypatch.setattr(kernel_switch, "_garbage_recipe", recipe)
    flag, x, y = torch.zeros(1), torch.arange(4.0), torch.full((4,), 7.0)
    with switch.switched("garbage"):
        flag_and_double[(1,)](flag, x, y, 4, BLOCK=4)
    # three drawn to write; with the constants real (flag, y), one to tell x unwritten, one to compare y
    # with x's, the two constants' drawn again (x still holds its own); three to compare after the run
    # on garbage: never two at once
    assert len(draws) == 10 and max(draws) == 0
    assert float(flag) == 1.0 and x.tolist() == [0.0, 1.0, 2.0, 3.0]  # and the same garbage both times: x put back


def test_a_kernel_on_garbage_over_the_device_copy_limit_runs_on_garbage_in_pieces(switch, monkeypatch):
    """Past GARBAGE_MAX_BYTES the copy that puts tensors back is kept in host memory, and the
    garbage is drawn and compared piece by piece: the probe still writes its flag, the input it
    did not write is put back, and the output holds the double of garbage."""
    from htam_engine.evaluate import kernel_switch

    monkeypatch.setattr(kernel_switch, "GARBAGE_MAX_BYTES", 8)
    monkeypatch.setattr(kernel_switch, "GARBAGE_PIECE_ELEMENTS", 3)
    flag, x, y = torch.zeros(1), torch.arange(16.0).reshape(4, 4), torch.full((4, 4), 7.0)
    with switch.switched("garbage"):
        flag_and_double[(1,)](flag, x, y, 16, BLOCK=16)
    assert float(flag) == 1.0 and torch.equal(x, torch.arange(16.0).reshape(4, 4))
    assert not torch.equal(y, 2 * x) and not (y == 7.0).any()


def test_pieces_cover_a_tensor_once(monkeypatch):
    from htam_engine.evaluate import kernel_switch

    monkeypatch.setattr(kernel_switch, "GARBAGE_PIECE_ELEMENTS", 5)
    for shape in [(4, 4), (1, 3, 7), (10,), (2, 1, 9), ()]:
        t = torch.zeros(shape)
        for piece in kernel_switch._pieces(t):
            assert piece.numel() <= 5 or piece.dim() <= 1  # a row longer than a piece stays whole
            piece += 1
        assert (t == 1).all(), shape


def test_a_kernel_on_garbage_over_the_host_copy_limit_is_skipped_with_its_tensors_spoiled(switch, monkeypatch):
    from htam_engine.evaluate import kernel_switch

    monkeypatch.setattr(kernel_switch, "GARBAGE_MAX_BYTES", 8)
    monkeypatch.setattr(kernel_switch, "GARBAGE_HOST_MAX_BYTES", 8)
    flag, x, y = torch.zeros(1), torch.arange(4.0), torch.zeros(4)
    with switch.switched("garbage"):
        flag_and_double[(1,)](flag, x, y, 4, BLOCK=4)
    assert torch.isnan(flag).all() and torch.isnan(x).all() and torch.isnan(y).all()


def test_uninstall_restores_the_launchers():
    import triton.runtime.jit as jit

    run = jit.JITFunction.run
    s = KernelSwitch().install()
    assert jit.JITFunction.run is not run
    s.uninstall()
    assert jit.JITFunction.run is run


def test_a_clean_process_verifies_clean(guards):
    assert guards.verify() == []


def test_patched_timers_sync_and_settings_are_reported(guards):
    time.perf_counter = lambda: 0.0
    original = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *a: None
    torch.set_num_threads(torch.get_num_threads() + 1)
    try:
        found = {f.rule: f.message for f in guards.verify()}
    finally:
        torch.cuda.synchronize = original
    assert "time.perf_counter" in found["timer_tamper"]
    assert "torch.cuda.synchronize" in found["sync_tamper"]
    assert "torch.get_num_threads()" in found["global_setting"]


def test_patched_harness_functions_and_serializer_are_reported(guards):
    clock, packb = timing._perf_counter_ns, msgpack.packb
    try:
        timing._perf_counter_ns = lambda: 0
        msgpack.packb = lambda *a, **k: b""
        found = [f.message for f in guards.verify() if f.rule == "harness_tamper"]
    finally:
        timing._perf_counter_ns, msgpack.packb = clock, packb
    assert any("timing._perf_counter_ns" in m for m in found) and any("msgpack.packb" in m for m in found)


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


def test_cuda_sandboxes_get_compiled_triton_kernels():
    # Under the interpreter a side stream's work is finished (copied back synchronously) before
    # forward returns: a GPU sandbox must see real GPU kernels.
    from htam_engine.evaluate.process import worker_env

    assert "TRITON_INTERPRET" not in worker_env("cuda:0")
    assert worker_env("cpu")["TRITON_INTERPRET"] == "1"


def test_a_kernel_on_garbage_past_the_host_memory_available_is_skipped_with_its_tensors_spoiled(switch, monkeypatch):
    """Judges side by side may each hold a put-back copy at once: past half the host memory
    available then, the launch is skipped and spoiled, as past the bound."""
    from htam_engine.evaluate import kernel_switch

    monkeypatch.setattr(kernel_switch, "GARBAGE_MAX_BYTES", 8)
    monkeypatch.setattr(kernel_switch, "_host_room", lambda: 8)
    flag, x, y = torch.zeros(1), torch.arange(4.0), torch.zeros(4)
    with switch.switched("garbage"):
        flag_and_double[(1,)](flag, x, y, 4, BLOCK=4)
    assert torch.isnan(flag).all() and torch.isnan(x).all() and torch.isnan(y).all()
