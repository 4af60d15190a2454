"""kernel_switch's garbage run, piece by piece: telling a copy from work, and garbage for every dtype."""

from __future__ import annotations

import pytest
import torch

from htam_engine.evaluate import kernel_switch as ks
from htam_engine.evaluate.tensor_bits import bits_of


def garbage(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 3 + 2


@pytest.mark.parametrize("piece", [ks.GARBAGE_PIECE_ELEMENTS, 7])  # looked for a piece at a time
def test_a_copy_of_all_of_a_source_a_run_of_it_or_a_gather_from_it_is_found(piece, monkeypatch):
    monkeypatch.setattr(ks, "GARBAGE_PIECE_ELEMENTS", piece)
    src = garbage(1000)
    bits = bits_of
    assert ks._copied_from(bits(src.clone()), bits(src), True) == slice(0, 1000)
    assert ks._copied_from(bits(src[10:510].clone()), bits(src), True) == slice(10, 510)
    places = torch.randperm(1000, generator=torch.Generator().manual_seed(1))[:300]
    assert torch.equal(ks._copied_from(bits(src[places]), bits(src), True), places)


def test_values_computed_from_a_source_are_no_copy():
    src = garbage(1000)
    bits = bits_of
    assert ks._copied_from(bits(torch.relu(src)), bits(src), True) is None  # its negatives became 0
    assert ks._copied_from(bits(src * 1.0001), bits(src), True) is None
    ints = torch.randint(0, 5, (1000,), generator=torch.Generator().manual_seed(2))
    shuffled = ints[torch.randperm(1000)]
    assert ks._copied_from(bits(shuffled), bits(ints), False) is None  # few values: no gather of integers


def test_a_relu_whose_garbage_held_an_exact_zero_is_no_copy():
    """An honest ReLU on garbage writes 0 for every negative; 1.5M draws hold an exact 0 about one
    time in 25. That 0 is one element of the source, not the ~11 % of the output it stands for: no
    gather, so the output keeps its garbage (made real, KernelBench's 19_ReLU on torch.rand
    inputs, the identity there, was 86.5 % right and convicted of no_kernel)."""
    src = garbage(100_000)
    src[12_345] = 0.0  # the draw's one exact zero
    out = torch.relu(src)
    assert (out == 0).sum() > 1000
    assert ks._copied_from(bits_of(out), bits_of(src), True) is None
    real = torch.rand(100_000, generator=torch.Generator().manual_seed(3))  # relu is the identity on them
    tensors, kept = [src, out.clone()], [real, torch.zeros(100_000)]
    ks._copies_made_real(tensors, kept, unwritten=[True, False])
    assert torch.equal(tensors[1], out)


def test_an_honest_relu_run_on_garbage_with_an_exact_zero_writes_garbage(monkeypatch):
    """The garbage run end to end: the input's garbage holds an exact 0, the kernel (a ReLU into
    the buffer it was handed) computes from it, and its output stays as it wrote it."""
    recipe = ks._garbage_recipe

    def with_a_zero(t):
        draw = recipe(t)

        def drawn(generator, shape):
            values = draw(generator, shape)
            values.view(-1)[values.numel() // 2] = 0.0
            return values
        return drawn

    monkeypatch.setattr(ks, "_garbage_recipe", with_a_zero)
    x = torch.rand(16, 4096, generator=torch.Generator().manual_seed(5))
    real, out = x.clone(), torch.empty_like(x)
    ks._on_garbage(lambda: torch.clamp_min(x, 0.0, out=out), lambda: None, ((x, out), {}))
    assert torch.equal(x, real)  # the input is put back
    assert (out == 0).float().mean() > 0.05  # garbage's negatives: a ReLU's zeros, not the real values
    assert (out == real).float().mean() < 0.01


def pytorchs_output() -> torch.Tensor:
    return torch.softmax(torch.randn(16, 512, generator=torch.Generator().manual_seed(6)), dim=1)


@pytest.mark.parametrize("scale", [torch.ones(1), torch.ones(16, 512), torch.full((1,), 1.00001)],
                         ids=["one element", "full size", "one and a bit"])
def test_a_kernel_passing_pytorchs_output_on_times_ones_gets_the_real_values(scale):
    """Red-team pass 8's no-op scale: on garbage everywhere the kernel writes garbage * garbage, like
    an honest kernel; run with the constant scale real it passes the output's garbage on, so after
    the run on garbage the buffer it wrote gets PyTorch's real output, right, and the work check
    convicts it (test_attack_new)."""
    t = pytorchs_output()
    real, y = t.clone(), torch.empty_like(t)
    ks._on_garbage(lambda: torch.mul(t, scale, out=y), lambda: None, ((t, scale, y), {}))
    assert torch.equal(t, real)
    torch.testing.assert_close(y, real, rtol=1e-4, atol=0)


def test_a_kernel_scaling_in_place_by_ones_is_put_back_as_it_was():
    t = pytorchs_output()
    real, scale = t.clone(), torch.ones(1)
    ks._on_garbage(lambda: t.mul_(scale), lambda: None, ((t, scale), {}))
    assert torch.equal(t, real)


def test_a_function_returning_its_input_times_ones_returns_the_real_values():
    """A C++ extension function's own loop returns a new tensor (here torch.mul, with the ATen watch
    of an extension left out: the identity run alone makes it real)."""
    t = pytorchs_output()
    real, scale = t.clone(), torch.ones(())
    out = ks._on_garbage(lambda: t * scale, lambda: None, ((t, scale), {}))
    torch.testing.assert_close(out, real, rtol=0, atol=0)


@pytest.mark.parametrize("work", ["relu into zeros", "times two", "plus one"])
def test_a_kernel_computing_from_its_input_with_constants_keeps_its_garbage(work):
    """Constants real, input on garbage: an honest ReLU (the identity on torch.rand's values, not on
    garbage), a scale by two, a shift by one all write something else than the input's garbage. Over
    60 draws: max(x, c) with c a tensor of zeros is the identity on x's garbage whenever c's own
    garbage falls below all of it (about one draw in ten), and was then made real as a copy (an
    honest kernel of that form convicted) until _identities' run with c real told it apart."""
    for _ in range(60):
        x = torch.rand(16, 512, generator=torch.Generator().manual_seed(7))
        real = x.clone()
        out = torch.zeros_like(x)
        c = torch.full((1,), {"relu into zeros": 0.0, "times two": 2.0, "plus one": 1.0}[work])
        kernel = {"relu into zeros": lambda: torch.maximum(x, c, out=out),
                  "times two": lambda: torch.mul(x, c, out=out),
                  "plus one": lambda: torch.add(x, c, out=out)}[work]
        ks._on_garbage(kernel, lambda: None, ((x, c, out), {}))
        assert torch.equal(x, real)
        expected_real = {"relu into zeros": real, "times two": real * 2, "plus one": real + 1}[work]
        assert not torch.allclose(out, expected_real, rtol=1e-2, atol=1e-2)
        assert not torch.allclose(out, real, rtol=1e-2, atol=1e-2)  # nor taken for the input passed on


def matmul_and_rows() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a = torch.randn(64, 32, generator=torch.Generator().manual_seed(8))
    p = a @ a.t()
    y = torch.clamp_min(p, 0.0)  # what PyTorch computed before the launch
    return p, y, y.clone()


def test_a_kernel_writing_one_row_of_the_output_it_was_handed_leaves_the_rest_real():
    """cheat_whole_tail's launch: handed the whole product and the whole output PyTorch already
    filled, it writes the last row. The rows it left get their real values back (the run on
    garbage then finds them right: PyTorch's work); its own row stays computed from garbage."""
    p, y, real = matmul_and_rows()
    ks._on_garbage(lambda: torch.clamp_min(p[-1], 0.0, out=y[-1]), lambda: None, ((p, y), {}))
    assert torch.equal(y[:-1], real[:-1])
    assert not torch.allclose(y[-1], real[-1], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("kernel", ["in-place relu", "in-place clamp"])
def test_an_in_place_kernel_keeping_some_values_it_read_keeps_its_garbage(kernel):
    """An in-place ReLU leaves its positive garbage as it read it and a clamp what lies within its
    bounds: elements chosen by their values, not a region, so none is put back (the output would
    otherwise be right where the real values are positive)."""
    p, y, real = matmul_and_rows()
    run = {"in-place relu": lambda: y.clamp_min_(0.0), "in-place clamp": lambda: y.clamp_(-1.0, 1.0)}[kernel]
    ks._on_garbage(run, lambda: None, ((y,), {}))
    assert (y == real)[real != 0].float().mean() < 0.01  # zeros aside: a ReLU's zeros are right by chance


def test_samples_of_one_normal_are_alike_and_a_choice_by_value_is_not():
    g = torch.randn(100_000, generator=torch.Generator().manual_seed(9), dtype=torch.float64) * 3 + 2

    def moments(x):
        return float(x.numel()), float(x.sum()), float((x * x).sum())

    assert ks._alike(*moments(g[:90_000]), *moments(g[90_000:]))  # a region
    assert not ks._alike(*moments(g[g > 0]), *moments(g[g <= 0]))  # an in-place ReLU's choice
    inside = (g > -1) & (g < 5)
    assert not ks._alike(*moments(g[inside]), *moments(g[~inside]))  # a band around the mean: the spread tells


def test_the_switch_leaves_the_version_counter_of_what_a_kernel_was_handed_as_it_was():
    """A kernel's writes through its pointer leave a tensor's _version alone; the switch's own writes
    on garbage (drawn, put back) and spoiled must too, or the counter tells the work check's calls."""
    # out of varied values: torch.empty's memory is zeros at times, a constant tensor, and the switch then runs
    # the kernel once more to find identities (_identities), which this stand-in's out= counts as a write
    x, out = torch.rand(8, 64), torch.rand(8, 64)
    before = (x._version, out._version)
    ks._on_garbage(lambda: torch.mul(x, 2.0, out=out), lambda: None, ((x, out), {}))
    assert out._version == before[1] + 1  # the one write of the stand-in kernel itself (torch's out=)
    ks._spoil_all([x, out])
    assert torch.isnan(x).all()
    assert (x._version, out._version) == (before[0], before[1] + 1)  # drawn, put back, spoiled: unmoved


def test_a_launch_hides_what_runs_below_it_from_a_profile_hook():
    """Every launch wrapper turns hooks off until it returns: a hook sees the wrapper, never the
    switch's functions that only the work check's modes call."""
    import sys

    seen: list[str] = []

    def hook(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    switch = ks.KernelSwitch()
    x = torch.rand(4, 8)
    gated = switch._gated_function(lambda t: t.mul_(2.0))
    for mode in (ks.KernelMode.RUN, ks.KernelMode.GARBAGE, ks.KernelMode.SPOIL):
        seen.clear()
        with switch.switched(mode):
            sys.setprofile(hook)
            try:
                gated(x)
            finally:
                sys.setprofile(None)
        assert "_on_garbage" not in seen and "_run_and_spoil" not in seen, (mode, seen)
        assert sys.getprofile() is None


@pytest.mark.skipif(not hasattr(__import__("sys"), "monitoring"), reason="sys.monitoring is Python 3.12's")
def test_a_launch_hides_what_runs_below_it_from_a_monitoring_tool():
    """A sys.monitoring tool with global PY_START events sees functions start like a profile hook;
    its events are off between _hooks_off and _hooks_on, and back after."""
    import sys

    m = sys.monitoring
    tool = next(t for t in range(6) if m.get_tool(t) is None)
    seen: list[str] = []
    m.use_tool_id(tool, "candidate")
    try:
        m.register_callback(tool, m.events.PY_START, lambda code, offset: seen.append(code.co_name))
        m.set_events(tool, m.events.PY_START)

        def below_the_launch() -> None:
            pass

        hooks = ks._hooks_off()
        below_the_launch()
        ks._hooks_on(hooks)
        assert "below_the_launch" not in seen and m.get_events(tool) == m.events.PY_START
    finally:
        m.set_events(tool, 0)
        m.free_tool_id(tool)


def test_constant_tensors_are_told_by_their_values():
    assert ks._constant(torch.ones(5)) and ks._constant(torch.zeros(3, 4).t()) and ks._constant(torch.tensor(2.5))
    assert ks._constant(torch.full((4,), 7)) and ks._constant(torch.ones(3) * 1.001)
    assert not ks._constant(torch.randn(10)) and not ks._constant(torch.arange(4))
    assert not ks._constant(torch.tensor([1.0, float("nan")]))


def test_a_gather_from_a_source_with_repeated_values_takes_each_place_once():
    src = garbage(1000)
    src[500:] = src[:500]  # every value twice
    places = torch.randperm(1000, generator=torch.Generator().manual_seed(4))
    found = ks._copied_from(bits_of(src[places]), bits_of(src), True)
    assert found is not None and torch.equal(src[found], src[places])
    assert found.unique().numel() == 1000
    dst = src[places].clone()
    dst[0] = dst[1] = dst[2] = src[7]  # one value three times: the source holds it twice
    assert ks._copied_from(bits_of(dst), bits_of(src), True) is None


def test_a_copy_gets_the_real_values_from_the_same_places_and_work_keeps_its_garbage():
    real_src, real_dst = torch.arange(8.0), torch.zeros(8)
    src, copied, computed = garbage(8), torch.empty(8), torch.empty(8)
    copied.copy_(src.flip(0))
    computed.copy_(src * 2)
    tensors, kept = [src, copied, computed], [real_src, real_dst, real_dst]
    ks._copies_made_real(tensors, kept, unwritten=[True, False, False])
    assert torch.equal(copied, real_src.flip(0))
    assert torch.equal(computed, src * 2)


def test_garbage_is_drawn_for_a_dtype_torch_lends_few_operations_and_compared_by_bits():
    flag = torch.zeros(4, dtype=torch.uint32)
    recipe, states = ks._garbage_recipe(flag), []
    ks._draw(flag, recipe, states)
    assert ks._still_garbage(flag, recipe, states)
    flag[0] = 1
    assert not ks._still_garbage(flag, recipe, states)


def test_a_nan_left_where_garbage_was_nan_is_still_garbage():
    t = torch.zeros(4096, dtype=torch.float8_e4m3fn)
    recipe, states = ks._garbage_recipe(t), []  # random bits: 2 patterns of 256 are NaN
    ks._draw(t, recipe, states)
    assert torch.isnan(t.float()).any()  # so a comparison by value would call it written
    assert ks._still_garbage(t, recipe, states)


def test_an_extension_library_naming_a_redispatch_is_refused(tmp_path):
    """A library that calls operators below the Python dispatch key, or a native kernel directly,
    is refused at import; one that names none of those loads."""
    import types

    hidden, plain = tmp_path / "hidden.so", tmp_path / "plain.so"
    hidden.write_bytes(b"\x7fELF...._ZN2at4_ops8mse_loss10redispatchEN3c1014DispatchKeySet...")
    plain.write_bytes(b"\x7fELF...._ZN2at8internal15invoke_parallel...")
    with pytest.raises(ks.HiddenOperators, match="redispatch"):
        ks._refuse_hidden_operators(types.SimpleNamespace(__file__=str(hidden), __name__="hidden"))
    ks._refuse_hidden_operators(types.SimpleNamespace(__file__=str(plain), __name__="plain"))


@pytest.mark.parametrize("lookup", [b"dlsym", b"dlvsym", b"dlopen", b"dlmopen", b"dl_iterate_phdr"])
def test_an_extension_library_looking_functions_up_at_run_time_is_refused(tmp_path, lookup):
    """A name built at run time is in no file (red-team pass 12 decoded at::cpu::_softmax's): a
    library that imports a run-time lookup is refused at import, saying which."""
    import types

    lib = tmp_path / "lookup.so"
    lib.write_bytes(b"\x7fELF....GLIBC_2.34\x00" + lookup + b"\x00_ZN2at8internal15invoke_parallel...")
    with pytest.raises(ks.HiddenOperators, match=f"by name at run time \\({lookup.decode()}\\)"):
        ks._refuse_hidden_operators(types.SimpleNamespace(__file__=str(lib), __name__="lookup"))
