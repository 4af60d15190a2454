"""Chunked comparisons: the same verdicts, mismatches and norms as the whole-tensor comparison
they replaced (kept as the oracle in legacy_compare.py), whether an output fits in one run or
is cut into many, and extra memory bounded by a run instead of several float64 copies of the
output."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import legacy_compare
import pytest
import torch

from htam_engine.evaluate.checks import compare
from htam_engine.evaluate.config import DEFAULT_TOLERANCES

# The cases (all-zeros softmax under atol, noise floors) are written for a float32 tolerance of
# 1e-2, a looser one than the default (KernelBench's 1e-4), as in test_checks_compare.py.
TOL = dict(DEFAULT_TOLERANCES, float32=1e-2)


def _perturbed(ref: torch.Tensor, at: list[int], by: float) -> torch.Tensor:
    new = ref.clone()
    flat = new.view(-1)
    for i in at:
        flat[i] += by
    return new


def _with(ref: torch.Tensor, at: dict[int, float]) -> torch.Tensor:
    new = ref.clone()
    for i, v in at.items():
        new.view(-1)[i] = v
    return new


def _cases() -> list[tuple[str, object, object]]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(37, 29, generator=g)
    soft = torch.softmax(torch.rand(3, 700, generator=g), dim=1)
    nan_ref = _with(x, {5: math.nan, 40: math.inf, 41: -math.inf})
    ints = torch.randint(-50, 50, (11, 13), generator=g)
    c = torch.randn(9, 7, dtype=torch.complex64, generator=g)
    return [
        ("equal", x.clone(), x),
        ("within tolerance", x + 1e-4, x),
        ("two bad elements, the worse later", _perturbed(_perturbed(x, [3], 0.5), [900], 1.0), x),
        ("ties keep the first", _perturbed(x, [100, 700], 0.5), x),
        ("all zeros for softmax", torch.zeros_like(soft), soft),
        ("constant for softmax", torch.full_like(soft, 1 / 700), soft),
        ("NaN where finite", _with(x, {17: math.nan}), x),
        ("Inf where finite", _with(x, {17: math.inf, 600: -math.inf}), x),
        ("NaN/Inf in place", nan_ref.clone(), nan_ref),
        ("Inf sign flipped", _with(nan_ref, {40: -math.inf}), nan_ref),
        ("finite where NaN/Inf", x.clone(), nan_ref),
        ("NaN moved", _with(_with(nan_ref, {5: 1.0}), {6: math.nan}), nan_ref),
        ("float16", x.half() + 0.02, x.half()),
        ("float64", x.double() + 1e-4, x.double()),
        ("bfloat16 equal", x.bfloat16(), x.bfloat16()),
        ("integers equal", ints.clone(), ints),
        ("integers differ", _with(ints, {3: 99, 120: -99}), ints),
        ("bool", torch.tensor([True, False, True, False]), torch.tensor([True, True, True, True])),
        ("complex close", c + 1e-4, c),
        ("complex far", _with(c, {10: 5 + 5j}), c),
        ("empty", torch.empty(0, 4), torch.empty(0, 4)),
        ("0-d equal", torch.tensor(1.5), torch.tensor(1.5)),
        ("0-d far", torch.tensor(3.0), torch.tensor(1.5)),
        ("0-d int", torch.tensor(4), torch.tensor(5)),
        ("transposed candidate", _perturbed(x, [200], 0.3).t().contiguous().t(), x),
        ("expanded (stride 0) candidate", torch.zeros(1, 29).expand(37, 29), x),
        ("3-d, cut inside rows", _perturbed(torch.randn(4, 5, 6, generator=g), [77], 1.0), torch.zeros(4, 5, 6)),
        ("tuple", (x + 1, ints), (x, ints)),
        ("python numbers", 2.0, 2.5),
        ("shape differs", torch.ones(16), torch.ones(4, 4)),
        ("number for a tensor", 1.0, torch.tensor(1.0)),
    ]


CASES = _cases()


@pytest.fixture
def legacy(monkeypatch):
    """compare_outputs running the whole-tensor comparison (the dispatch and messages are shared)."""

    def run(new, ref, noise=None):
        with monkeypatch.context() as m:
            m.setattr(compare, "_compare_float", legacy_compare._compare_float)
            m.setattr(compare, "_compare_exact", legacy_compare._compare_exact)
            return compare.compare_outputs(new, ref, TOL, "get_inputs#0", noise)

    return run


@pytest.mark.parametrize("run_elements", [compare.CHUNK_ELEMENTS, 7])
@pytest.mark.parametrize("name,new,ref", CASES, ids=[c[0] for c in CASES])
def test_chunked_comparison_gives_the_mismatch_the_whole_tensor_one_gave(name, new, ref, run_elements, legacy,
                                                                         monkeypatch):
    expected = legacy(new, ref)
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    assert compare.compare_outputs(new, ref, TOL, "get_inputs#0") == expected


def test_the_cases_cover_passes_and_every_kind_of_mismatch(legacy):
    notes = [m.note if m else "ok" for m in (legacy(new, ref) for _, new, ref in CASES)]
    for kind in ("ok", "NaN/Inf", "finite values", "outside atol", "whole-output", "differ (exact",
                 "shape", "expected a"):
        assert any(kind in n for n in notes), kind


@pytest.mark.parametrize("run_elements", [compare.CHUNK_ELEMENTS, 64])
def test_noise_floor_decides_as_before_when_the_reference_is_not_near_zero(run_elements, legacy, monkeypatch):
    ref = torch.softmax(torch.rand(2, 3000), dim=1)
    new = ref * (1 + 0.05 * torch.randn_like(ref))  # 5 % off everywhere: over tol*||ref||
    floors = [None, 0.0, 1e-3 * float(torch.linalg.vector_norm(ref)), 0.01 * float(torch.linalg.vector_norm(ref))]
    expected = [legacy(new, ref, noise=lambda p, f=f: f) for f in floors]
    assert expected[0] is not None and expected[-1] is None  # the floor matters in this case
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    assert [compare.compare_outputs(new, ref, TOL, "get_inputs#0", lambda p, f=f: f) for f in floors] == expected


@pytest.mark.parametrize("run_elements", [compare.CHUNK_ELEMENTS, 6])
def test_relative_error_and_noise_norm_match_the_whole_tensor_ones(run_elements, monkeypatch):
    g = torch.Generator().manual_seed(1)
    exact = torch.randn(23, 17, dtype=torch.float64, generator=g)
    exact.view(-1)[[4, 50]] = torch.tensor([math.nan, math.inf], dtype=torch.float64)
    out = (exact + 1e-3 * torch.randn(23, 17, dtype=torch.float64, generator=g)).float()
    out.view(-1)[90] = math.inf
    pairs = [(out, exact), (out.t(), exact.t()), (out[:, :1].expand(23, 17), exact), (torch.tensor(2.0), torch.tensor(1.0))]
    finite_out = out.clone()
    finite_out.view(-1)[90] = 0.0
    pairs.append((finite_out, exact))
    expected = [f(o, e) for o, e in pairs for f in (legacy_compare.relative_error, legacy_compare.noise_norm)]
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", run_elements)
    got = [f(o, e) for o, e in pairs for f in (compare.relative_error, compare.noise_norm)]
    assert all(g == x or math.isclose(g, x, rel_tol=1e-12) for g, x in zip(got, expected)), (got, expected)
    assert math.isfinite(got[-2]) and 0 < got[-2] < 1
    assert compare.relative_error(torch.zeros(3), torch.zeros(3)) is None
    assert compare.relative_error(torch.zeros(3), torch.zeros(4)) is None
    assert compare.noise_norm(torch.empty(0), torch.empty(0)) == 0.0


def test_runs_cover_every_element_once_in_order():
    for shape, limit in [((5, 7), 3), ((2, 3, 4), 5), ((9,), 4), ((), 2), ((3, 1, 10), 10), ((4, 6), 100)]:
        t = torch.arange(math.prod(shape)).reshape(shape)
        seen = []
        for offset, (flat,) in _runs(t, limit):
            assert flat.numel() <= limit and offset == len(seen)
            seen.extend(flat.tolist())
        assert seen == list(range(math.prod(shape))), shape


def _runs(t, limit):
    old = compare.CHUNK_ELEMENTS
    compare.CHUNK_ELEMENTS = limit
    try:
        yield from compare.runs(t)
    finally:
        compare.CHUNK_ELEMENTS = old


_MEMORY_PROBE = textwrap.dedent("""
    import json, sys
    import torch
    from htam_engine.evaluate.checks import compare
    sys.path.insert(0, sys.argv[1])
    import legacy_compare
    compare.CHUNK_ELEMENTS = 1 << 14
    n = 1 << 21
    a, b = torch.rand(n), torch.rand(n)
    i, j = torch.randint(0, 9, (n,), dtype=torch.int32), torch.randint(0, 9, (n,), dtype=torch.int32)
    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024
    def run(x, y, k, l, rel, noise):
        compare.compare_outputs(x, y, {"float32": 1e-2}, "s")
        compare.compare_outputs(k, l, {}, "s")
        rel(x, y)
        noise(x, y)
    def extra(float_cmp, exact_cmp, rel, noise):
        compare._compare_float, compare._compare_exact = float_cmp, exact_cmp
        run(a[:99], b[:99], i[:99], j[:99], rel, noise)  # code paths paged in before the baseline
        base = status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the resident high-water mark starts again from here
        run(a, b, i, j, rel, noise)
        return status("VmHWM") - base
    chunked = extra(compare._compare_float, compare._compare_exact, compare.relative_error, compare.noise_norm)
    whole = extra(legacy_compare._compare_float, legacy_compare._compare_exact, legacy_compare.relative_error,
                  legacy_compare.noise_norm)
    print(json.dumps({"chunked": chunked, "whole": whole}))
""")


def test_extra_memory_is_bounded_by_one_run_not_the_output():
    # Outputs of 8 MiB each (float32 and int32): the whole-tensor comparison needs several
    # 16 MiB float64 copies at once; runs of 2^14 elements need a few MiB.
    # Every allocation above 64 KiB is its own mapping, unmapped when freed: the peak resident
    # size then counts live memory, not what glibc's arenas keep cached after a run.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(Path(__file__).parent)], capture_output=True,
                          text=True, timeout=120, check=True, env=env)
    extra = json.loads(proc.stdout.strip().splitlines()[-1])
    assert extra["whole"] > 64, extra  # the probe sees full-size copies where they are made
    assert extra["chunked"] < 4, extra


@pytest.mark.gpu
def test_extra_gpu_memory_is_bounded_by_one_run():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    n = 1 << 26  # 256 MiB per float32 output
    a = torch.rand(n, device="cuda")
    b = a + 1e-4
    i = torch.randint(0, 9, (n,), device="cuda", dtype=torch.int32)
    torch.cuda.synchronize()
    for fn in (lambda: compare.compare_outputs(b, a, TOL, "s"), lambda: compare.compare_outputs(i, i.clone(), TOL, "s"),
               lambda: compare.relative_error(b, a), lambda: compare.noise_norm(b, a)):
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        extra = torch.cuda.max_memory_allocated() - base
        # i.clone() is part of the call above: one int32 output at most besides the runs
        assert extra <= 4 * n + 16 * 8 * compare.CHUNK_ELEMENTS, extra / 2**20
