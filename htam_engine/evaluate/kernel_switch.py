"""Custom kernels inside a sandbox: counted, and switched off when the judge asks.

"A custom kernel ran" is judged by the work it did: on two extra checked calls the judge asks
the sandbox to skip every custom kernel, then to make every one raise. If the output is still
correct either way, the kernels did no necessary work (a decoy launch, a try/except fallback to
PyTorch). The wrappers are one Python call each and the same in every call:

"Skipped" keeps the candidate's control flow as it is (a launch that would fail still fails, so a
try/except around a broken kernel still falls back) and throws the kernel's results away:

- Triton: JITFunction.run (compiled kernels), InterpretedFunction.run (TRITON_INTERPRET=1) and
  CompiledKernel.__getitem__ (a kernel compiled ahead and launched directly). Skipped, a launch
  binds its arguments as usual and runs on an empty grid: nothing is written.
- Extensions built by torch.utils.cpp_extension (load_inline / load): every function of the
  module is wrapped when the module is imported. Skipped, a function runs, then every tensor it
  returned and every tensor argument it changed is overwritten with NaN (-1 for integers).
- Operators an extension registers (TORCH_LIBRARY, called as torch.ops.ns.op): a
  TorchFunctionMode intercepts them, only while kernels are switched off, and treats them as
  extension functions.

"On garbage" (a third call) runs every kernel for real, on its whole grid, with every tensor it
was handed overwritten first by random values (floating point: normal, GARBAGE_SHIFT spreads
above the tensor's mean with GARBAGE_SCALE times its spread; integers: uniform between its least
and greatest, so an index stays in bounds; booleans: either), drawn from a generator of the
switch's own; once the kernel returned, every tensor that still holds its random values is put
back as it was. One the kernel wrote part of gets its real values back where it left the garbage
only if the part left is a region (rows, a slice: its garbage is distributed like the garbage the
kernel overwrote), not a choice by value: an in-place ReLU writes back the positive garbage it
read, and putting those elements back would hand it the right output; a kernel handed the whole
output that PyTorch filled, writing one row of it, leaves the rest to be put back
(_unwritten_region_made_real). A kernel computing from what it reads writes garbage; one whose writes do not depend on what it reads (a probe writing a
flag, to tell a call with kernels skipped from a real one) writes as usual, and PyTorch finds its
own data as it was. So a candidate that computes with PyTorch and runs a probe meets its probe
answered, and the share of the output still right convicts it. A tensor the kernel wrote that
then holds only values of the garbage of another tensor it was handed and did not write (bit
for bit: all of it, a slice, or for four-byte values and up elements from anywhere in it, each
once at most) was only copied into (a kernel "making the input contiguous" for PyTorch to
compute from, or moving PyTorch's finished output into the buffer forward returns): it gets the
same copy of the real values, so PyTorch's work around the copy meets real data and the share
still right convicts it too (_copies_made_real). A kernel handed a constant tensor (all ones, all
zeros, a one-element scale) runs once more before that, with the constants at their real values and
the rest on garbage: a tensor it then writes that holds another's garbage, to within
ATEN_MATCH_TOLERANCE, was passed on unchanged (PyTorch's output multiplied by a tensor of ones, the
identity on the real values, while on garbage everywhere the scale is garbage too and the kernel
writes garbage like an honest one), and after the run on garbage it gets the real values of what it
passed on, as a copy does (_identities). A kernel whose only work is an affine step with weights
still at their initial ones and zeros is taken for one that passes its input on: on these values
it is. An extension function's ATen calls are watched on garbage: one that
returns what an operator computed (a single at::softmax call; a copy, a view or a reshape of its
result, to within a tolerance) gets what the operator computes from the real values instead, for
the same reason (aten_watch). The values are finite, as real
ones, so that a kernel cannot keep them from being put back by rewriting what it read (one that
rewrote NaN as 0 in place, the identity on real inputs, would have kept NaN garbage); they are not
the tensor's own distribution, or a statistic of them (an MSE, a mean) lands within the
tolerance of the real one by chance (the honest MSE kernel of the suite, one run in three). An
expanded view's memory gets garbage once per location. A copy of the tensors puts them back, on
their device up to GARBAGE_MAX_BYTES together and in host memory beyond; the garbage to compare
with is drawn again, piece by piece. Over GARBAGE_HOST_MAX_BYTES, or half the host memory
available then, the tensors are spoiled and the kernel skipped, as "spoiled" below. A dtype torch lends few operations (uint32, float8) gets
random bits; whether a tensor still holds its garbage is asked of its bits. The switch's own work on a candidate's tensors runs out of
its sight (_unseen: no subclass or mode of the candidate's sees the clone and the copy).

What this does not do: a candidate that looks for the work check's calls can tell them apart in
its own process, where the switch runs, and return garbage only there (the adversarial suite's
strict xfails: the switch's state read through the wrapper's closure, a sentinel value the probe
reads, the kernel's read of the input against PyTorch's, the garbage's statistics, the operator
gate's mode, the time a launch on garbage takes). It is then ok at PyTorch's speed.

"On the bulk": where the judge's output is a reduction to a few elements (a loss, a total), a run
on garbage everywhere cannot tell whose work the output is: an honest reduction kernel writes
garbage, and so does a kernel that only scales the one-element sum PyTorch computed
(cheat_scalar_tail_mse), and one element is all right or all wrong. There the judge asks for garbage
only in the tensors of more elements than wire.Arm.garbage_above (sequence.bulk_threshold: the
square root of the inputs' elements, at least the output's size), the smaller ones keeping their
real values: a kernel that reduced the inputs, or a library product of them, was handed them and
writes garbage, while one handed only what PyTorch had reduced already (or handed the inputs too
and not using them) computes the right output from real values, and the share still right convicts
it as it convicts a probe. A tensor counts by the memory locations a kernel may read through it (a
view's own, not its storage's; an expanded view's once each).

"Spoiled" (a fourth call) measures how much of the output the kernels made: it skips every
kernel as above and overwrites every tensor a kernel was handed (arguments, and what an
extension function returned) with NaN (-1 for integers). What is still right after that was made
by PyTorch from memory no kernel touched: a kernel computing one row while PyTorch computes the
others leaves most of the output right. A kernel writing in place after a library op (the tail
after cuBLAS) is handed the whole output, so nothing of it stays right. The judge makes this call
last: parameters a kernel was handed stay spoiled.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import types
from enum import Enum
from typing import AbstractSet, Any, Callable, Iterator, NamedTuple

from htam_engine.evaluate.aten_watch import ATEN_MATCH_TOLERANCE, AtenWatch, close
from htam_engine.evaluate.interpreter_guard import check_launch
from htam_engine.evaluate.tensor_bits import bits_of, integer_kinds

class KernelMode(str, Enum):
    """What every custom kernel does within a call (the judge names it in wire.Arm)."""

    RUN = "run"
    SKIP = "skip"
    RAISE = "raise"
    GARBAGE = "garbage"
    SPOIL = "spoil"

    def __str__(self) -> str:
        return self.value


RUN, SKIP, RAISE, GARBAGE, SPOIL = (KernelMode.RUN, KernelMode.SKIP, KernelMode.RAISE, KernelMode.GARBAGE,
                                    KernelMode.SPOIL)
MODES = tuple(KernelMode)
# A kernel run on garbage copies what it was handed first, to put back what it did not write: on
# the tensors' device up to GARBAGE_MAX_BYTES a launch, in host memory beyond (a copy there and
# back: seconds for KernelBench's largest sets), up to GARBAGE_HOST_MAX_BYTES (beyond, it is
# skipped with its tensors spoiled, as in SPOIL), and at most half the host memory available then. Garbage is drawn and compared in pieces of at
# most GARBAGE_PIECE_ELEMENTS, the device's only other memory for it; its mean and spread are
# read from at most _STATISTIC_ELEMENTS of a tensor.
GARBAGE_MAX_BYTES = 1 << 30
GARBAGE_HOST_MAX_BYTES = 48 << 30
GARBAGE_PIECE_ELEMENTS = 1 << 24
_STATISTIC_ELEMENTS = 1 << 22
# Floating-point garbage: normal, this many of the tensor's spreads above its mean, with this many
# times its spread (module docstring: not the tensor's own distribution).
GARBAGE_SHIFT = 2.0
GARBAGE_SCALE = 3.0


# What an extension library names when it calls PyTorch's operators out of the dispatcher's sight
# (the dispatcher's thread-local keys set by hand, a redispatch below the Python key, a native or
# CPU kernel called directly): the operators then pass the work check's watch unseen
# (aten_watch). Mangled names, read from the built library, so no spelling of the source hides
# them. Not among them: ExcludeDispatchKeyGuard, which every TORCH_LIBRARY registration's code
# names too, so a guard excluding the Python key around an operator still gets through.
_HIDDEN_OPERATOR_SYMBOLS = (b"tls_set_dispatch_key", b"_force_tls_local_dispatch_key_set", b"redispatch",
                            b"_ZN2at6native", b"_ZN2at3cpu")
# ... and what one names when it looks functions up by name at run time: a name it builds then (red-team
# pass 12 decoded _ZN2at3cpu8_softmax... byte by byte and called the CPU kernel through dlsym) is in no
# file. An honest extension links what it calls: none of the 68 built on this project's CPU box names
# these, and torch links a CUDA extension's runtime dynamically (-lcudart), whose static archive would.
_RUNTIME_LOOKUP_SYMBOLS = (b"dlsym", b"dlvsym", b"dlopen", b"dlmopen", b"dl_iterate_phdr")
# (names, what naming one says the extension does, why it is refused), in the order they are looked for
_REFUSED = (
    (_HIDDEN_OPERATOR_SYMBOLS, "calls PyTorch's operators out of the dispatcher's sight",
     "the judge cannot tell them from its own work"),
    (_RUNTIME_LOOKUP_SYMBOLS, "looks functions up by name at run time",
     "what it calls that way (PyTorch's own kernels among them) the judge cannot tell from its own work; link "
     "what the kernel calls instead"),
)


class HiddenOperators(ImportError):
    """An extension built to call PyTorch's operators out of the dispatcher's sight."""


def _refuse_hidden_operators(module: Any) -> None:
    path = getattr(module, "__file__", None)
    if not path:
        return
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return
    for symbols, what, why in _REFUSED:
        named = [s.decode() for s in symbols if s in data]
        if named:
            raise HiddenOperators(f"extension {getattr(module, '__name__', path)} {what} ({', '.join(named)}): {why}")


class KernelsDisabled(RuntimeError):
    """Raised by every custom kernel while the judge has them switched off (mode "raise")."""


class KernelSwitch:
    """Install once per sandbox, before the candidate is imported."""

    def __init__(self) -> None:
        self.mode = RUN
        self.launches = 0
        self.extension_ops: set[str] = set()
        # What a garbage run saw that convicts by itself: drained into the call's reply (sandbox.py)
        self.no_kernel: list[str] = []
        # GARBAGE: only tensors of more elements than this get garbage, the rest keep their real
        # values (0: every tensor). The judge sets it where the output is a reduction of few elements
        # (wire.Arm.garbage_above, sequence.bulk_threshold): see "On the bulk" in the module docstring.
        self.garbage_above = 0
        self._restore: list[Callable[[], None]] = []

    # ------------------------------------------------------------ the gate every kernel passes
    def _gate(self, run: Callable[[], Any], skipped: Callable[[], Any], handed: Any = (),
              extension: bool = False) -> Any:
        """`run` the kernel, or `skipped` (its stand-in), as the mode says; `handed`: what it was
        handed (for GARBAGE); `extension`: an extension function (its ATen calls are watched on
        garbage, aten_watch)."""
        mode = self.mode
        if mode == RUN:
            out = run()
            self.launches += 1  # only launches that returned: a failed try does not count
            return out
        if mode == GARBAGE:
            return _on_garbage(run, skipped, handed, extension, self.no_kernel, self.garbage_above)
        if mode in (SKIP, SPOIL):
            return skipped()
        raise KernelsDisabled("custom kernels are switched off for this call")

    def _function_gate(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """The gate for an extension function or operator (see the module docstring for SKIP)."""
        return self._gate(lambda: fn(*args, **kwargs),
                          lambda: _run_and_spoil(fn, args, kwargs, every_argument=self.mode in (SPOIL, GARBAGE)),
                          (args, kwargs), extension=True)

    def _skipped_launch(self, launch: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
        """A Triton launch on the empty grid; when spoiling, its tensor arguments overwritten first."""
        if self.mode in (SPOIL, GARBAGE):
            from htam_engine.evaluate.checks.memory import tensor_leaves

            _spoil_all(tensor_leaves((args, kwargs)))
        return launch()

    @contextlib.contextmanager
    def switched(self, mode: KernelMode | str, garbage_above: int = 0) -> Iterator[None]:
        """Within the block, every custom kernel runs (RUN), is skipped (SKIP), raises (RAISE), runs on
        garbage with what it did not write put back (GARBAGE; garbage_above > 0: only in the tensors
        of more elements than that, "on the bulk") or is skipped with every tensor it was handed
        overwritten (SPOIL)."""
        if mode not in MODES:
            raise ValueError(f"unknown kernel mode {mode!r}")
        mode = self.mode = KernelMode(mode)
        self.garbage_above = max(0, int(garbage_above)) if mode == GARBAGE else 0
        guard = _OpsGate(self) if mode != RUN and self.extension_ops else contextlib.nullcontext()
        try:
            with guard:
                yield
        finally:
            self.mode = RUN
            self.garbage_above = 0

    # ------------------------------------------------------------ installation
    def _patch(self, owner: Any, name: str, new: Any) -> None:
        old = owner.__dict__[name]
        setattr(owner, name, new)
        self._restore.append(lambda: setattr(owner, name, old))

    def install(self) -> "KernelSwitch":
        self._wrap_triton()
        self._wrap_extension_loader()
        return self

    def uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()

    def _wrap_triton(self) -> None:
        try:
            import triton.runtime.jit as jit
        except Exception:  # noqa: BLE001 - no triton here: nothing to wrap
            return
        switch = self
        owners: list[type] = [jit.JITFunction]
        with contextlib.suppress(Exception):
            from triton.runtime.interpreter import InterpretedFunction

            owners.append(InterpretedFunction)
        for cls in owners:
            original = cls.__dict__.get("run")
            if original is None:
                continue

            def run(self_: Any, *args: Any, __orig: Callable = original, __interpreted: bool = cls is not owners[0],
                    **kwargs: Any) -> Any:
                hooks = _hooks_off()
                try:
                    if __interpreted:  # the CPU's kernels: plain Python, held to what a compile allows
                        check_launch(self_.fn, args, kwargs)
                    if switch.mode == RUN:  # the path of every normal call: as little as possible
                        out = __orig(self_, *args, **kwargs)
                        if not kwargs.get("warmup", False):  # compiling ahead is not launching
                            switch.launches += 1
                        return out
                    if kwargs.get("warmup", False):
                        return __orig(self_, *args, **kwargs)
                    return switch._gate(lambda: __orig(self_, *args, **kwargs),
                                        lambda: switch._skipped_launch(
                                            lambda: __orig(self_, *args, **{**kwargs, "grid": EMPTY_GRID}), args,
                                            kwargs),
                                        (args, kwargs))
                finally:
                    _hooks_on(hooks)

            functools.update_wrapper(run, original)
            self._patch(cls, "run", run)
        with contextlib.suppress(Exception):
            from triton.compiler.compiler import CompiledKernel

            original_getitem = CompiledKernel.__dict__.get("__getitem__")
            if original_getitem is not None:
                def __getitem__(self_: Any, grid: Any, __orig: Callable = original_getitem) -> Any:
                    launch = __orig(self_, grid)

                    def gated(*args: Any, **kwargs: Any) -> Any:
                        hooks = _hooks_off()
                        try:
                            return switch._gate(lambda: launch(*args, **kwargs),
                                                lambda: switch._skipped_launch(
                                                    lambda: __orig(self_, EMPTY_GRID)(*args, **kwargs), args, kwargs),
                                                (args, kwargs))
                        finally:
                            _hooks_on(hooks)

                    return gated

                functools.update_wrapper(__getitem__, original_getitem)
                self._patch(CompiledKernel, "__getitem__", __getitem__)

    def _wrap_extension_loader(self) -> None:
        import torch
        import torch.utils.cpp_extension as ce

        original = ce._import_module_from_library
        switch = self

        def _import_module_from_library(*args: Any, **kwargs: Any) -> Any:
            before = set(torch._C._dispatch_get_all_op_names())
            module = original(*args, **kwargs)
            _refuse_hidden_operators(module)
            added = {n.split(".")[0] for n in torch._C._dispatch_get_all_op_names()} - {n.split(".")[0] for n in before}
            switch.extension_ops |= added
            if isinstance(module, types.ModuleType):
                switch.instrument(module)
            return module

        functools.update_wrapper(_import_module_from_library, original)
        self._patch(ce, "_import_module_from_library", _import_module_from_library)

    def instrument(self, module: types.ModuleType) -> None:
        """Wrap each function of an extension module in place (idempotent)."""
        for name in dir(module):
            if name.startswith("__"):
                continue
            fn = getattr(module, name, None)
            if not callable(fn) or isinstance(fn, type) or getattr(fn, "__htam_gated__", False):
                continue
            gated = self._gated_function(fn)
            try:
                setattr(module, name, gated)
            except (AttributeError, TypeError):
                continue

    def _gated_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        switch = self

        def gated(*args: Any, **kwargs: Any) -> Any:
            hooks = _hooks_off()
            try:
                if switch.mode == RUN:  # the path of every normal call: as little as possible
                    out = fn(*args, **kwargs)
                    switch.launches += 1
                    return out
                return switch._function_gate(fn, args, kwargs)
            finally:
                _hooks_on(hooks)

        functools.update_wrapper(gated, fn)
        gated.__htam_gated__ = True  # type: ignore[attr-defined]
        return gated


EMPTY_GRID = (0, 0, 0)

# sys.monitoring (3.12 on) and its tool ids: a tool the candidate registered sees functions start
# too. _all_events (one call: the global events of every tool) spares the six reads per launch
# where none is on, the usual case (130 ns a launch against 290 on 3.12).
_MONITORING = getattr(sys, "monitoring", None)
_MONITORING_TOOLS = range(6)
_ANY_EVENTS = getattr(_MONITORING, "_all_events", None)


def _hooks_off() -> tuple[Any, Any, list[tuple[int, int]]] | None:
    """Every launch, in every mode, first turns off the candidate's profile and trace hooks and the
    global events of sys.monitoring's tools, until it returns (_hooks_on): below a launch the
    switch's own functions run only on the work check's calls, and a hook seeing their names told
    those calls apart (cheat_probe_profiler). What a hook sees of the launch is then the same in
    every mode. None where none is on (the usual case: three reads, _ANY_EVENTS says why)."""
    profile, trace = sys.getprofile(), sys.gettrace()
    events = []
    if _MONITORING is not None and (_ANY_EVENTS is None or _ANY_EVENTS()):
        for tool in _MONITORING_TOOLS:
            if _MONITORING.get_tool(tool) is not None and _MONITORING.get_events(tool):
                events.append((tool, _MONITORING.get_events(tool)))
                _MONITORING.set_events(tool, 0)
    if profile is None and trace is None and not events:
        return None
    sys.setprofile(None)
    sys.settrace(None)
    return profile, trace, events


def _hooks_on(hooks: tuple[Any, Any, list[tuple[int, int]]] | None) -> None:
    if hooks is None:
        return
    profile, trace, events = hooks
    for tool, mask in events:
        _MONITORING.set_events(tool, mask)
    sys.settrace(trace)
    sys.setprofile(profile)


def _spoil(t: Any, integer: int = -1) -> None:
    import torch

    if isinstance(t, torch.Tensor) and t.numel():
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            t.fill_(False)
        else:
            t.fill_(integer)


def _spoil_all(tensors: list[Any]) -> None:
    """_spoil each tensor's memory (an expanded view's once per location), out of the candidate's sight."""
    with _unseen():
        for t in tensors:
            plain = _distinct_elements(t) if t.numel() else None
            if plain is not None:
                _spoil(plain)


def _garbage_recipe(t: Any) -> Callable[[Any, tuple[int, ...]], Any]:
    """How to draw random values of a shape for `t` or a piece of it (module docstring) from a
    generator on t's device, fixed by t's values now: the same generator state draws the same
    garbage again. A dtype torch lends few operations (uint32, float8: no min, no randn of its
    own) gets random bits. Mean and spread are read from at most _STATISTIC_ELEMENTS of t."""
    import torch

    if t.dtype not in _typed_kinds():
        return _random_bits(t)
    if t.is_floating_point() or t.is_complex():
        real = torch.view_as_real(t) if t.is_complex() else t
        flat = real.reshape(-1)
        sample = flat[:: max(1, flat.numel() // _STATISTIC_ELEMENTS)].float()
        spread, mean = (float(v) for v in torch.std_mean(sample)) if sample.numel() > 1 else (1.0, 0.0)
        if not (math.isfinite(mean) and math.isfinite(spread)) or spread == 0.0:
            mean, spread = 0.0, 1.0

        def floating(generator: Any, shape: tuple[int, ...]) -> Any:
            drawn = torch.randn((*shape, 2) if t.is_complex() else shape, generator=generator, device=t.device,
                                dtype=torch.float32)
            drawn = (drawn * (GARBAGE_SCALE * spread) + (mean + GARBAGE_SHIFT * spread)).to(real.dtype)
            return torch.view_as_complex(drawn) if t.is_complex() else drawn
        return floating
    if t.dtype == torch.bool:
        return lambda generator, shape: torch.randint(0, 2, shape, generator=generator, device=t.device).bool()
    low, high = int(t.min()), int(t.max())
    if high == low:
        return lambda generator, shape: torch.full(shape, low, dtype=t.dtype, device=t.device)
    top = high + 1 if high < torch.iinfo(t.dtype).max else high  # randint's bound is past its values
    return lambda generator, shape: torch.randint(low, top, shape, generator=generator, device=t.device,
                                                  dtype=t.dtype)


def _random_bits(t: Any) -> Callable[[Any, tuple[int, ...]], Any]:
    """Random bit patterns of t's element size, as t's dtype (a float8 may be NaN: the kernel's
    writes are told from them by their bits, _still_garbage)."""
    import torch

    kind = integer_kinds()[t.element_size()]
    info = torch.iinfo(kind)
    return lambda generator, shape: torch.randint(info.min, info.max, shape, generator=generator, device=t.device,
                                                  dtype=kind).view(t.dtype)


@functools.cache
def _typed_kinds() -> frozenset:
    """The dtypes with randn / randint / min of their own."""
    import torch

    return frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
                      torch.complex128, torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})


@contextlib.contextmanager
def _unseen() -> Iterator[None]:
    """The switch's own work on a candidate's tensors, out of the candidate's sight: no tensor
    subclass's __torch_function__ or __torch_dispatch__ and no mode the candidate pushed sees it
    (a subclass handed to a kernel would otherwise see the clone and copy of a garbage run)."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with torch._C.DisableTorchFunction(), _disable_current_modes(), torch._C._DisableTorchDispatch():
        yield


def _distinct_elements(t: Any) -> Any | None:
    """`t` as a plain tensor that names each of its memory locations once (an expanded view's
    stride-0 dimensions taken at index 0), or None where its strides overlap otherwise."""
    import torch

    plain = t.as_subclass(torch.Tensor)
    plain = plain[tuple(0 if st == 0 and n > 1 else slice(None) for n, st in zip(plain.shape, plain.stride()))]
    return None if torch._debug_has_internal_overlap(plain) else _alias(plain)


def _alias(t: Any) -> Any:
    """`t`'s memory under a tensor of its own: the switch's writes through it (garbage drawn, put
    back, spoiled) leave the version counter of the candidate's tensor (`_version`, which in-place
    writes count and a kernel's writes through its pointer do not) as a real call leaves it. A probe
    reading the counter told every call of the work check (cheat_probe_version). Where the tensor
    has no storage to alias, `t` itself."""
    import torch

    try:
        return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                                    t.shape, t.stride())
    except Exception:  # noqa: BLE001 - see the docstring
        return t


def _on_garbage(run: Callable[[], Any], skipped: Callable[[], Any], handed: Any, extension: bool = False,
                no_kernel: list[str] | None = None, above: int = 0) -> Any:
    """`run` the kernel with every tensor in `handed` (of more than `above` elements: the bulk; the
    smaller ones keep their real values) overwritten by random values like its own, then put back
    every tensor that still holds them (module docstring). Beside the kernel's
    tensors it holds one copy of them, on their device up to GARBAGE_MAX_BYTES together, in host
    memory beyond, up to GARBAGE_HOST_MAX_BYTES or half the host memory available (over that:
    `skipped`, spoiled). Garbage is drawn
    in pieces (GARBAGE_PIECE_ELEMENTS) and drawn again from the generator's state before each to
    compare with, so the device holds one piece of it at a time. The switch's own tensor work is
    done out of the candidate's sight (_unseen)."""
    from htam_engine.evaluate.checks.memory import tensor_leaves

    with _unseen():
        seen: set[tuple] = set()
        tensors = []
        for t in tensor_leaves(handed):
            plain = _distinct_elements(t) if t.numel() else None
            if plain is not None and plain.numel() <= above:
                # not the bulk: counted by the memory locations a kernel may read through it (a view's,
                # not its storage's: a one-element sum handed as a view of a large buffer stays small;
                # an expanded view's once each: a sum expanded to the inputs' size stays one element)
                continue
            key = (plain.data_ptr(), tuple(plain.shape), plain.stride(), plain.dtype) if plain is not None else None
            if plain is not None and key not in seen:
                seen.add(key)
                tensors.append(plain)
        kept: list[Any] = []
        drawn: list[tuple[Callable[..., Any], list[Any]]] = []  # (recipe, the generator's state before each piece)
        constant: list[bool] = []
        prepared = False
        total = sum(t.numel() * t.element_size() for t in tensors)
        if total <= GARBAGE_MAX_BYTES or total <= min(GARBAGE_HOST_MAX_BYTES, _host_room()):
            try:
                # every copy and recipe before any is overwritten: views may overlap
                kept = [t.clone() if total <= GARBAGE_MAX_BYTES else t.to("cpu", copy=True) for t in tensors]
                recipes = [_garbage_recipe(t) for t in tensors]
                constant = [_constant(t) for t in tensors]
                for t, recipe in zip(tensors, recipes):
                    drawn.append((recipe, []))
                    _draw(t, recipe, drawn[-1][1])
                prepared = True
            except Exception:  # noqa: BLE001 - a copy or a draw that failed: skipped, spoiled
                for t, was in zip(tensors, kept[:len(drawn)]):
                    t.copy_(was)
    if not prepared:
        return skipped()
    identities, apart = _identities(run, tensors, kept, drawn, constant) if any(constant) and not all(constant) \
        else ([], set())
    aten = AtenWatch() if extension else None
    out = None
    try:
        with aten or contextlib.nullcontext():
            out = run()
        return out
    finally:
        with _unseen():
            unwritten = [_still_garbage(t, recipe, states) for t, (recipe, states) in zip(tensors, drawn)]
            _copies_made_real(tensors, kept, unwritten, apart)
            _identities_made_real(identities, tensors, tensor_leaves(out), kept, unwritten)
            if aten is not None:
                aten.made_real(out, tensors, kept)
                if aten.python_ran and no_kernel is not None:
                    no_kernel.append(f"an extension function or operator ran the candidate's Python inside it "
                                     f"({aten.python_ran}): a kernel's work is done in the kernel")
                if aten.hidden and no_kernel is not None:
                    no_kernel.append(f"an extension function dispatched PyTorch's operators where the work check's "
                                     f"watch does not look ({', '.join(aten.hidden)}: on a thread of "
                                     "its own, or below the Python dispatch key): a kernel's work is done in the "
                                     "kernel")
            for t, was, left, (recipe, states) in zip(tensors, kept, unwritten, drawn):
                if left:
                    t.copy_(was)
                else:
                    _unwritten_region_made_real(t, was, recipe, states)


class _Identity(NamedTuple):
    """A tensor the kernel wrote (one of its handed tensors, or the `returned`-th tensor an
    extension function returned) that it left holding the garbage of handed tensor `source`."""

    written: int
    source: int
    returned: bool


def _constant(t: Any) -> bool:
    """Whether every element of `t` holds one value, to within ATEN_MATCH_TOLERANCE of the largest
    for floating point (a tensor of ones, zeros, a one-element scale): on its real values a kernel
    that multiplies by it, or adds it, can be the identity. Read a piece at a time (_pieces), the
    first piece of a tensor of varied values telling at once."""
    import torch

    if t.numel() <= 1:
        return True
    if t.dtype not in _typed_kinds() or t.is_complex():
        return False
    floating = t.is_floating_point()
    low = high = None
    for piece in _pieces(t):
        lo, hi = torch.stack(torch.aminmax(piece)).tolist()  # one pass, one read back
        low, high = (lo, hi) if low is None else (min(low, lo), max(high, hi))
        if floating and not (math.isfinite(low) and math.isfinite(high)):
            return False
        if high - low > (ATEN_MATCH_TOLERANCE * max(-low, high) if floating else 0):
            return False
    return True


def _identities(run: Callable[[], Any], tensors: list[Any], kept: list[Any],
                drawn: list[tuple[Callable[..., Any], list[Any]]],
                constant: list[bool]) -> tuple[list[_Identity], set[tuple[int, int]]]:
    """Run the kernel once more, before its run on garbage, with the `constant` tensors it was
    handed at their real values and the others on their garbage, and name every tensor it wrote
    that then holds the garbage of another (or its own, in place) to within ATEN_MATCH_TOLERANCE:
    a kernel that multiplies PyTorch's finished output by a tensor of ones, or adds zeros, is the
    identity on the real values while on garbage everywhere it writes garbage like an honest
    kernel. Also (written, source) for each handed tensor it wrote that did not then hold a
    source's garbage: with the constants real it computed there, so an in-order copy of that
    garbage in the run on garbage came of the constants' own garbage (_copies_made_real). Every
    tensor is left holding its garbage again, as drawn. A kernel that fails here names none: its
    run on garbage tells."""
    from htam_engine.evaluate.checks.memory import overlaps, tensor_leaves

    with _unseen():
        for t, was, real in zip(tensors, kept, constant):
            if real:
                t.copy_(was)
    found: list[_Identity] = []
    apart: set[tuple[int, int]] = set()
    try:
        returned = tensor_leaves(run())
    except Exception:  # noqa: BLE001 - see the docstring
        returned = None
    with _unseen():
        # unwritten: each tensor still as it was before this run (a constant at its real values)
        unwritten = [False] * len(tensors)
        if returned is not None:
            unwritten = [_same_bits(t, was) if real else _still_garbage(t, recipe, states)
                         for t, was, real, (recipe, states) in zip(tensors, kept, constant, drawn)]
            sources = [k for k, real in enumerate(constant) if not real]
            for i, t in enumerate(tensors):
                if unwritten[i]:
                    if not constant[i]:  # in place, bit for bit: it changes only where these values are not real
                        found.append(_Identity(i, i, False))
                    continue
                for k in sources:
                    if k == i or (unwritten[k] and not overlaps(tensors[k], t)):
                        if _holds_garbage_of(t, tensors[k], *drawn[k]):
                            found.append(_Identity(i, k, False))
                            break
                        apart.add((i, k))
            for j, leaf in enumerate(returned):
                for k in sources:
                    if unwritten[k] and _holds_garbage_of(leaf, tensors[k], *drawn[k]):
                        found.append(_Identity(j, k, True))
                        break
        for t, (recipe, states), real, left in zip(tensors, drawn, constant, unwritten):
            if real or not left:  # a garbage tensor left unwritten still holds what was drawn
                _redraw(t, recipe, states)
    return found, apart


def _identities_made_real(identities: list[_Identity], tensors: list[Any], returned: list[Any], kept: list[Any],
                          unwritten: list[bool]) -> None:
    """Each tensor _identities named, written again on garbage, gets the real values of the tensor
    it passed on, as a copy gets them (_copies_made_real): what PyTorch computed before it then
    meets the real data, and the share of the output still right tells whose work it was."""
    for identity in identities:
        if identity.returned:
            if identity.written >= len(returned):
                continue
            t = returned[identity.written]
        elif unwritten[identity.written]:
            continue  # put back as it was, with the rest
        else:
            t = tensors[identity.written]
        real = kept[identity.source]
        if t.numel() == real.numel() and t.dtype == real.dtype:  # a returned tensor: the last run's may differ
            t.copy_(real.reshape(t.shape))


def _holds_garbage_of(t: Any, s: Any, recipe: Callable[..., Any], states: list[Any]) -> bool:
    """Whether `t` holds the garbage drawn into `s` (drawn again from the generator's states), piece
    by piece, each element to within ATEN_MATCH_TOLERANCE (aten_watch.close), in s's logical order."""
    if t.numel() != s.numel() or t.dtype != s.dtype or not t.numel():
        return False
    if t.shape != s.shape and not t.is_contiguous():
        return False
    flat = t.reshape(-1) if t.shape != s.shape else None
    mine = None if flat is not None else _pieces(t)
    at = 0
    for _, garbage in _drawn_again(s, recipe, states):
        here = next(mine) if mine is not None else flat[at:at + garbage.numel()].view(garbage.shape)
        at += garbage.numel()
        if not close(here, garbage):
            return False
    return True


def _same_bits(t: Any, was: Any) -> bool:
    """Whether `t` holds `was` (its copy, maybe in host memory) bit for bit, piece by piece."""
    return all(bool((bits_of(a) == bits_of(b.to(a.device))).all()) for a, b in zip(_pieces(t), _pieces(was), strict=True))


def _redraw(t: Any, recipe: Callable[..., Any], states: list[Any]) -> None:
    """The garbage drawn into `t` (_draw) written into it again."""
    for piece, garbage in _drawn_again(t, recipe, states):
        piece.copy_(garbage)


def _host_room() -> int:
    """Host memory a put-back copy may take now: half of what is available (judges side by side,
    `htam batch --jobs N`, may each hold one at once)."""
    try:
        import psutil

        return psutil.virtual_memory().available // 2
    except Exception:  # noqa: BLE001 - no reading: the bound alone
        return GARBAGE_HOST_MAX_BYTES


def _pieces(t: Any) -> Iterator[Any]:
    """Views of `t` that together cover it, each of at most GARBAGE_PIECE_ELEMENTS elements where
    its shape allows (split along the first dimensions), always in the same order."""
    if t.dim() == 0 or t.numel() <= GARBAGE_PIECE_ELEMENTS:
        yield t
        return
    if t.shape[0] == 1:
        yield from _pieces(t[0])
        return
    rows = max(1, GARBAGE_PIECE_ELEMENTS // (t.numel() // t.shape[0]))
    for start in range(0, t.shape[0], rows):
        piece = t[start:start + rows]
        yield from ([piece] if rows > 1 else _pieces(piece[0]))


def _draw(t: Any, recipe: Callable[..., Any], states: list[Any]) -> None:
    """Garbage into `t`, piece by piece; the generator's state before each piece into `states`."""
    generator = _generator(t.device)
    for piece in _pieces(t):
        states.append(generator.get_state())
        piece.copy_(recipe(generator, piece.shape))


def _drawn_again(t: Any, recipe: Callable[..., Any], states: list[Any]) -> Iterator[tuple[Any, Any]]:
    """(piece of `t`, the garbage _draw drew into it), drawn again from the generator's states."""
    generator = _generator(t.device)
    for piece, state in zip(_pieces(t), states, strict=True):
        generator.set_state(state)
        yield piece, recipe(generator, piece.shape)


def _still_garbage(t: Any, recipe: Callable[..., Any], states: list[Any]) -> bool:
    """Whether `t` holds exactly the garbage drawn into it, bit for bit (the kernel wrote nothing
    into it). Where the garbage cannot be drawn again: False, left as the kernel left it."""
    try:
        return all(bool((bits_of(piece) == bits_of(garbage)).all()) for piece, garbage in _drawn_again(t, recipe, states))
    except Exception:  # noqa: BLE001 - see the docstring
        return False


# A tensor the kernel wrote part of gets its real values back where it left the garbage only with
# at least this many elements on either side, and only where the two sides' garbage differs in mean
# and spread by less than this many standard errors: a region left (rows, a slice) holds garbage
# drawn like what was overwritten, while a kernel that is the identity on some values (an in-place
# ReLU keeps the positive garbage it read) leaves a choice by value, whose garbage is far apart.
REGION_MIN_ELEMENTS = 32
REGION_SPREADS = 5.0


def _unwritten_region_made_real(t: Any, was: Any, recipe: Callable[..., Any], states: list[Any]) -> None:
    """A floating tensor the kernel wrote only a region of (handed the whole output, it wrote one row
    while PyTorch had written the rest: cheat_whole_tail) gets its real values back where it left the
    garbage, as a tensor left whole does, so the share of the output still right tells whose work it
    was. In the real call those elements keep what they held too. Not where the elements left are a
    choice by the values read (REGION_SPREADS): putting back what an in-place ReLU left of positive
    garbage would hand it the right output. Two passes over the garbage drawn again: the statistics,
    then the put-back."""
    import torch

    if not t.is_floating_point() or t.numel() < 2 * REGION_MIN_ELEMENTS:
        return
    try:
        # (all, left) x (n, sum, sum of squares); the written side is all less left
        moments = torch.zeros(2, 3, dtype=torch.float64, device=t.device)
        for piece, garbage in _drawn_again(t, recipe, states):
            left = (bits_of(piece) == bits_of(garbage)).reshape(-1)
            g = garbage.reshape(-1).double()
            kept = torch.where(left, g, 0.0)
            moments[0, 0] += g.numel()
            moments[0, 1:] += torch.stack((g.sum(), (g * g).sum()))
            moments[1] += torch.stack((left.sum(dtype=torch.float64), kept.sum(), (kept * kept).sum()))
        (n, s, q), (n_left, s_left, q_left) = moments.tolist()
        n_written, s_written, q_written = n - n_left, s - s_left, q - q_left
        if min(n_left, n_written) < REGION_MIN_ELEMENTS or not _alike(n_left, s_left, q_left, n_written, s_written,
                                                                        q_written):
            return
        for (piece, garbage), real in zip(_drawn_again(t, recipe, states), _pieces(was), strict=True):
            bits = bits_of(piece)
            bits.copy_(torch.where(bits == bits_of(garbage), bits_of(real.to(piece.device)), bits))
    except Exception:  # noqa: BLE001 - a redraw that failed: left as the kernel left it
        return


def _alike(n1: float, s1: float, q1: float, n2: float, s2: float, q2: float) -> bool:
    """Whether two samples of one normal (count, sum, sum of squares) differ in mean and in variance
    by less than REGION_SPREADS standard errors of each."""
    n = n1 + n2
    var = (q1 + q2) / n - ((s1 + s2) / n) ** 2
    if not var > 0.0:
        return True  # one value throughout: nothing tells the sides apart
    m1, m2 = s1 / n1, s2 / n2
    v1, v2 = q1 / n1 - m1 * m1, q2 / n2 - m2 * m2
    inverse = 1.0 / n1 + 1.0 / n2
    return (abs(m1 - m2) <= REGION_SPREADS * math.sqrt(var * inverse)
            and abs(v1 - v2) <= REGION_SPREADS * var * math.sqrt(2.0 * inverse))


def _copies_made_real(tensors: list[Any], kept: list[Any], unwritten: list[bool],
                      apart: AbstractSet[tuple[int, int]] = frozenset()) -> None:
    """A tensor the kernel wrote that now holds only values of the garbage of another tensor it was
    handed and left unwritten was copied into, no more (a kernel that "makes a tensor
    contiguous", or moves PyTorch's finished output into the buffer forward returns): it gets the
    same copy of the real values instead, so PyTorch's work before or after the copy meets the
    real data and the share of the output still right tells whose work it was. Found by bits: a
    run of the source's elements in its memory order (a copy of all of it or of a slice, padded
    or not), or, for garbage of four bytes and more an element, where a value of a drawn normal
    names its place, each element anywhere in the source, each once at most (a transpose, a
    strided gather; a copy the size of GATHER_MAX_ELEMENTS at most). An honest kernel computes
    something from what it reads: on garbage wider than the real values (GARBAGE_SCALE), an element-wise op that matters
    on real values does not leave every value as read, and a selection that depends on the
    values (a max pool) gets the real values of the places it chose on garbage, not the right
    ones. Not a whole in-order copy of a source that, with the constants it was handed real, it
    did not pass on (`apart`, _identities): a ReLU taken as max(x, c) with c a tensor of zeros is
    the identity on x's garbage whenever c's garbage falls below all of it (about one run in ten),
    and was convicted as a copy."""
    from htam_engine.evaluate.checks.memory import overlaps

    sources = [k for k, left in enumerate(unwritten) if left]
    for i, t in enumerate(tensors):
        if unwritten[i] or not t.numel():
            continue
        for k in sources:
            s = tensors[k]
            if s.dtype != t.dtype or s.numel() < t.numel() or overlaps(s, t):
                continue
            places = _copied_from(bits_of(t).reshape(-1), bits_of(s).reshape(-1), t.is_floating_point() or t.is_complex())
            if (i, k) in apart and isinstance(places, slice) and places == slice(0, s.numel()):
                continue  # with the constants real it computed here: their garbage made this copy
            if places is not None:
                if not isinstance(places, slice):
                    places = places.to(kept[k].device)  # the copy may be in host memory
                real = bits_of(kept[k]).reshape(-1)[places]
                bits_of(t).copy_(real.view(bits_of(t).shape))
                break


def _equal_in_pieces(a: Any, b: Any) -> bool:
    """torch.equal of two flat tensors of one length, a piece at a time (no temporary their size)."""
    step = GARBAGE_PIECE_ELEMENTS
    return all(bool((a[k:k + step] == b[k:k + step]).all()) for k in range(0, a.numel(), step))


def _places_of(value: Any, flat: Any, most: int) -> list[int]:
    """The first `most` places of `value` in `flat`, looked for a piece at a time."""
    found: list[int] = []
    step = GARBAGE_PIECE_ELEMENTS
    for k in range(0, flat.numel(), step):
        found += [k + i for i in (flat[k:k + step] == value).nonzero().flatten()[: most - len(found)].tolist()]
        if len(found) >= most:
            break
    return found


# The largest destination whose every element is looked up in a source anywhere (a sort of the
# source and of the destination, with an index per element: ~30 bytes an element beside the tensors).
GATHER_MAX_ELEMENTS = 1 << 24


def _copied_from(dst: Any, src: Any, continuous: bool) -> Any | None:
    """Where in `src` each element of `dst` came from (indices, or a slice), or None where some
    element is not a value of `src`, or `dst` holds a value more often than `src` does. Both flat,
    as integer bits."""
    import torch

    n = dst.numel()
    for start in _places_of(dst[0], src[: src.numel() - n + 1], most=8):  # drawn garbage: found once, seldom more
        if _equal_in_pieces(src[start:start + n], dst):
            return slice(start, start + n)
    if not continuous or dst.element_size() < 4 or n > GATHER_MAX_ELEMENTS or src.numel() > 4 * GATHER_MAX_ELEMENTS:
        return None
    # A gather names each element of the source once at most: the k-th element of `dst` holding a
    # value takes the k-th place of that value in `src`, and a value `dst` holds more often than
    # `src` is no copy. Else a kernel's own constant that the garbage happens to hold once was a
    # "copy" of it: an honest ReLU's 0 for every negative, where 1.5M normal draws hold an exact 0
    # about one time in 25 (KernelBench's 19_ReLU on torch.rand inputs, everything else the
    # identity: made real, 86.5 % right, convicted in one evaluation in five).
    ordered, order = torch.sort(src)
    wanted, which = torch.sort(dst)
    at = torch.searchsorted(ordered, wanted, out_int32=True)  # the first place of each value in src
    at += torch.arange(n, dtype=torch.int32, device=dst.device)
    at -= torch.searchsorted(wanted, wanted, out_int32=True)  # ... and the k-th for its k-th in dst
    if bool((at >= src.numel()).any()) or not bool((ordered[at] == wanted).all()):
        return None
    places = torch.empty_like(which)
    places[which] = order[at]
    return places


_GENERATORS: dict[Any, Any] = {}


def _generator(device: Any) -> Any:
    """The switch's own generator for `device`: drawing garbage leaves the candidate's RNG alone."""
    import torch

    if device not in _GENERATORS:
        _GENERATORS[device] = torch.Generator(device=device)
        _GENERATORS[device].manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    return _GENERATORS[device]


def _run_and_spoil(fn: Callable[..., Any], args: tuple, kwargs: dict, every_argument: bool = False) -> Any:
    """Run an extension function, then overwrite whatever it produced: the tensors it returned and
    the tensor arguments it changed in place (every_argument: every tensor argument)."""
    from htam_engine.evaluate.checks.memory import same_values, tensor_leaves

    with _unseen():
        inputs = tensor_leaves((args, kwargs))
        before = None if every_argument else [t.clone() for t in inputs]
    out = fn(*args, **kwargs)
    with _unseen():
        touched = inputs if before is None else [t for t, was in zip(inputs, before) if not same_values(t, was)]
    _spoil_all([*touched, *tensor_leaves(out)])
    return out


class _OpsGate:
    """While kernels are off: calls of operators extensions registered go through the gate."""

    def __init__(self, switch: KernelSwitch):
        from torch.overrides import TorchFunctionMode

        ops = frozenset(switch.extension_ops)

        class Gate(TorchFunctionMode):
            def __torch_function__(self, func: Any, types_: Any, args: Any = (), kwargs: Any = None) -> Any:
                name = getattr(func, "_qualified_op_name", None) or getattr(getattr(func, "_schema", None), "name", None)
                if name in ops:
                    return switch._function_gate(func, tuple(args), dict(kwargs or {}))
                return func(*args, **(kwargs or {}))

        self._mode = Gate()

    def __enter__(self) -> None:
        self._mode.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)
