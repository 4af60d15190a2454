"""The work check's watch on the ATen operators an extension function dispatches on its garbage run.

An extension function is a custom kernel to the work check whatever it calls, so one that is
PyTorch's operators under a custom kernel's name (`return at::softmax(x, 1)`) computes from the
garbage it is handed like an honest kernel. On the garbage run (kernel_switch._on_garbage) a
dispatch mode records every ATen operator the function dispatches and what it returned. An
output of the function that holds what an operator returned (by value, to within
ATEN_MATCH_TOLERANCE: a clone, a reshape, a view, a last bit flipped; or the operator's own memory
viewed another way) gets what that operator computes from the real values instead: the function's
ATen calls are replayed on the real values of what it was handed (made_real), through every
operator before it whose result it read and every view into those. The judge then looks at how
much of the output is still right: an output PyTorch computed is all right, while an operator's
result the function changed by work of its own (a library product with its own epilogue) no
longer holds what the operator returned, or holds it only where that work changed nothing, and
stays as the function left it.

An operator the extension registered itself (TORCH_LIBRARY) is watched inside too: a mode's
handler runs what it handles with the mode set aside, so a backend kernel's ATen calls went
unseen; the handler runs an extension's operator's kernel with the mode back on (below_python).

Beside the mode, PyTorch's execution trace observer (global RecordFunction callbacks, every thread,
below every dispatch key) records the operators dispatched during the call. One it records at the top
of the call of which the mode saw nothing, neither it nor an operator it called, was dispatched where
the mode does not look: under a guard excluding the Python dispatch key, or on a thread the function
started (red-team pass 12: at::softmax so, ok at 0.73x and 0.045x). That is `hidden`: the work check
turns the candidate down for it (kernel_switch), whatever the output holds.

What it does not see: a kernel of PyTorch's called with no dispatch at all (an address found in
memory; a name looked up at run time is refused at import, kernel_switch), or native code that
turns the observer off inside the call (one registered by the candidate beforehand is removed
first); an output that is an operator's result permuted (a transpose copied out);
a result computed from memory the function made itself (a from_blob of a raw pointer: no real
value to replay it on). A dispatch mode active inside the function is what the candidate could ask
for, as it could ask for the operator gate's.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from htam_engine.evaluate.tensor_bits import bits_of

# An output holds what an operator returned when every element is within this of it, relative to
# the element and to the largest of the operator's values: wider than any judge's tolerance, so
# an output that would pass the judge as the operator's result is taken for it. An honest
# function's own work makes a difference beyond it somewhere, and where it does not, the
# operator's result on the real values is right only if the operator did the work.
ATEN_MATCH_TOLERANCE = 1e-2

# ATen operators that allocate, view or move data: inside an extension function they are the
# function's own plumbing, not PyTorch doing its work.
PLUMBING = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros", "zeros_like",
                      "ones_like", "full", "full_like", "fill_", "zero_", "copy_", "clone", "_to_copy", "detach",
                      "resize_", "contiguous", "alias", "lift_fresh", "set_", "_local_scalar_dense"})

# Operator namespaces of PyTorch itself; any other operator an extension function dispatches is the
# extension's own (TORCH_LIBRARY).
PYTORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_quantized"})

# The namespaces of the operators recorded: those that compute (prims: softmax written in
# torch.ops.prims had passed unrecorded).
RECORDED_NAMESPACES = frozenset({"aten", "prims"})

@functools.cache
def _harness_paths() -> tuple[str, ...]:
    """Where the Python that may run inside an extension call lives: PyTorch (and the packages it
    imports for itself), Triton, the harness, the standard library; a module's own file for a
    single-file module."""
    import sysconfig

    import htam_engine

    paths = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], "<frozen "]
    for name in ("torch", "triton", "sympy", "mpmath", "numpy", "typing_extensions", "filelock", "jinja2",
                 "networkx", "fsspec"):
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where:
            paths.append(os.path.dirname(where) + os.sep if os.path.basename(where) == "__init__.py" else where)
    paths.append(os.path.dirname(htam_engine.__file__) + os.sep)
    return tuple(paths)


def _harness_code(frame: Any, harness: tuple[str, ...]) -> bool:
    """Whether a frame runs code of PyTorch, Triton, the harness or the standard library, by its
    file; code generated at run time ("<string>": a dataclass's __init__, a namedtuple's __new__,
    a module torch writes and imports lazily) by the first caller with a file of its own. So code a
    candidate exec's and has PyTorch's own Python call passes as PyTorch's."""
    name = frame.f_code.co_filename
    while name.startswith("<") and not name.startswith("<frozen ") and frame.f_back is not None:
        frame = frame.f_back
        name = frame.f_code.co_filename
    return name.startswith(harness)


def below_python(args: tuple, kwargs: dict) -> Any:
    """The backend dispatch keys of the tensors in an operator's arguments (the CPU's for an
    operator without tensors, whose kernel, registered for every backend, has a CPU entry):
    redispatched to them, the operator's backend kernel runs as it would after the Python key."""
    import torch
    from htam_engine.evaluate.checks.memory import tensor_leaves

    keys = None
    for t in tensor_leaves((args, kwargs)):
        keys = torch._C._dispatch_keys(t) if keys is None else keys | torch._C._dispatch_keys(t)
    if keys is None:
        return torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
    # below BackendSelect, too: its kernels are fallthroughs, which a redispatch may not land on
    return keys & torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)


@dataclass(slots=True)
class _Record:
    """One ATen call of the function: its arguments, one tensor it returned, that tensor's values then."""

    func: Any
    args: tuple
    kwargs: dict
    index: int | None  # which tensor of a tuple the operator returned; None: the result itself
    result: Any
    values: Any


@dataclass
class AtenWatch:
    """Records an extension function's ATen calls while entered; made_real afterwards (module docstring)."""

    records: list[_Record] = field(default_factory=list)
    python_ran: str = ""  # the first function of the candidate's Python the call ran, if any
    seen: set[str] = field(default_factory=set)  # every operator the mode saw, "aten::softmax"
    hidden: list[str] = field(default_factory=list)  # operators dispatched where the mode does not look, sorted
    _mode: Any = None
    _profile: Any = None
    _trace: Any = None

    def __enter__(self) -> "AtenWatch":
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        records, seen = self.records, self.seen
        self._watch_python()
        self._trace = GlobalTrace.start()

        class Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
                kwargs = kwargs or {}
                seen.add(f"{func.namespace}::{func.overloadpacket.__name__}")
                if func.namespace not in PYTORCH_NAMESPACES:  # an extension's own operator: its kernel, watched
                    with self:
                        return func.redispatch(below_python(args, kwargs), *args, **kwargs)
                out = func(*args, **kwargs)
                if func.namespace not in RECORDED_NAMESPACES or func.is_view or func.overloadpacket.__name__ in PLUMBING:
                    return out
                results = [(None, out)] if isinstance(out, torch.Tensor) else \
                    list(enumerate(out)) if isinstance(out, (tuple, list)) else []
                for index, t in results:
                    if isinstance(t, torch.Tensor) and t.numel():
                        records.append(_Record(func, args, kwargs, index, t, t.detach().clone()))
                return out

        self._mode = Recorder()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._mode.__exit__(*exc)
        finally:
            sys.setprofile(self._profile)
            if self._trace is not None:
                self.hidden = sorted({name for name, below in self._trace.stop()
                                      if _computes(name) and not ({name, *below} & self.seen)})

    def _watch_python(self) -> None:
        """Note the first Python function run inside the call that is none of PyTorch's, Triton's,
        the harness's or the standard library's: the candidate's own Python, run inside what the
        judge takes for a kernel (an operator declared in C++ with a Python implementation, a C++
        function calling back into Python), where it can set the dispatch mode aside
        (_disable_current_modes) and have PyTorch compute unseen."""
        harness = _harness_paths()
        watch = self
        previous = sys.getprofile()

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "call" and not watch.python_ran and not _harness_code(frame, harness):
                watch.python_ran = f"{frame.f_code.co_name} in {frame.f_code.co_filename}"
            if previous is not None:
                previous(frame, event, arg)

        self._profile = previous
        sys.setprofile(profile)

    def made_real(self, out: Any, tensors: list[Any], kept: list[Any]) -> None:
        """Every tensor of `out` that holds what a recorded operator returned gets what the operator
        computes from the real values (`kept`: the real values of the handed `tensors`)."""
        from htam_engine.evaluate.checks.memory import tensor_leaves

        real = _RealValues(tensors, kept, self.records)
        for leaf in tensor_leaves(out):
            for i in reversed(range(len(self.records))):  # the latest operator first
                rec = self.records[i]
                now = _holds(leaf, rec)
                if now is None:
                    continue
                values = real.of(leaf, i + 1) if now else real.of_record(i)
                if values is not None:
                    leaf.copy_(values.reshape(leaf.shape))
                    break


def _computes(name: str) -> bool:
    """An operator of PyTorch's that computes (not one that allocates or moves data)."""
    namespace, _, op = name.partition("::")
    return namespace in RECORDED_NAMESPACES and op not in PLUMBING


class GlobalTrace:
    """PyTorch's execution trace observer over a span: the operators dispatched on every thread,
    each at the top of the span with the names of every operator it called. None where this torch
    lends no observer (the mode's records are then all the watch has)."""

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def start(cls) -> "GlobalTrace | None":
        import torch

        profiler = getattr(torch._C, "_profiler", None)
        if profiler is None or not hasattr(profiler, "_add_execution_trace_observer"):
            return None
        fd, path = tempfile.mkstemp(prefix="htam-aten-trace-", suffix=".json")
        os.close(fd)
        try:
            # One observer a process: one the candidate registered first (at import) would take the
            # trace into its own file and leave this one empty, so it goes first.
            profiler._remove_execution_trace_observer()
            if not profiler._add_execution_trace_observer(path):
                raise RuntimeError("no observer")
            profiler._enable_execution_trace_observer()
        except Exception:  # noqa: BLE001 - another observer on, or none lent: the mode alone
            os.unlink(path)
            return None
        return cls(path)

    def stop(self) -> list[tuple[str, set[str]]]:
        """(name, names of the operators below it) for each operator at the top of the span."""
        import torch

        try:
            torch._C._profiler._disable_execution_trace_observer()
            torch._C._profiler._remove_execution_trace_observer()
            with open(self.path, encoding="utf-8") as f:
                nodes = json.load(f).get("nodes", [])
        except Exception:  # noqa: BLE001 - an unreadable trace: the mode's records stand alone
            return []
        finally:
            os.unlink(self.path)
        names = {n["id"]: n.get("name", "") for n in nodes}
        children: dict[Any, list[Any]] = {}
        for n in nodes:
            if n.get("ctrl_deps") != n["id"]:  # the process node is its own parent
                children.setdefault(n.get("ctrl_deps"), []).append(n["id"])

        def below(i: Any) -> set[str]:
            out: set[str] = set()
            stack = list(children.get(i, []))
            while stack:
                j = stack.pop()
                out.add(names[j])
                stack.extend(children.get(j, []))
            return out

        # the top of the span: an operator whose parent is one of the observer's own nodes ("[pytorch|...]")
        return [(names[n["id"]], below(n["id"])) for n in nodes
                if not names[n["id"]].startswith("[") and names.get(n.get("ctrl_deps"), "").startswith("[")]


def _holds(leaf: Any, rec: _Record) -> bool | None:
    """Whether `leaf` holds what `rec`'s operator returned: True where it views the operator's own
    memory, False where it holds those values elsewhere (a copy, a reshape), None where it does not."""
    if leaf.dtype != rec.result.dtype:
        return None
    span = _within(leaf, rec.result)
    if span is not None:
        import torch

        return True if close(leaf, torch.as_strided(rec.values, leaf.size(), leaf.stride(), span)) else None
    if leaf.numel() == rec.values.numel() and close(leaf.reshape(-1), rec.values.reshape(-1)):
        return False
    return None


def _within(x: Any, base: Any) -> int | None:
    """Where `x` starts in `base`'s memory (as a storage offset for a tensor laid out as `base`) when
    every element of `x` lies in `base`'s span of the same storage; else None."""
    if not x.numel() or not base.numel():
        return None
    if x.untyped_storage().data_ptr() != base.untyped_storage().data_ptr() or x.device != base.device:
        return None
    lo, base_lo = x.storage_offset(), base.storage_offset()
    hi = lo + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
    base_hi = base_lo + sum((n - 1) * s for n, s in zip(base.shape, base.stride()))
    if lo < base_lo or hi > base_hi or min(x.stride(), default=0) < 0:
        return None
    return lo - base_lo


def close(a: Any, b: Any) -> bool:
    """Every element of `a` within ATEN_MATCH_TOLERANCE of `b`'s (module docstring), a piece at a
    time as the garbage run compares (kernel_switch._pieces); integers and booleans by bits."""
    import torch

    from htam_engine.evaluate.kernel_switch import _pieces  # the switch imports this module: here, not above

    b = b.to(a.device)
    pairs = list(zip(_pieces(a), _pieces(b)))
    if not (a.is_floating_point() or a.is_complex()):
        return all(bool((bits_of(pa) == bits_of(pb)).all()) for pa, pb in pairs)
    scale = max((float(pb.abs().max()) for _, pb in pairs if pb.numel()), default=0.0)
    atol = ATEN_MATCH_TOLERANCE * scale if math.isfinite(scale) else 0.0  # NaN or inf among the operator's values
    return all(bool(torch.isclose(pa, pb, rtol=ATEN_MATCH_TOLERANCE, atol=atol, equal_nan=True).all())
               for pa, pb in pairs)


class _RealValues:
    """What a tensor the function saw holds on the real values: a view into a handed tensor reads
    its kept copy; into an operator's result, that operator replayed on its arguments' real values."""

    def __init__(self, tensors: list[Any], kept: list[Any], records: list[_Record]):
        self.handed = list(zip(tensors, kept))
        self.records = records
        self.replayed: dict[int, Any] = {}

    def of(self, x: Any, before: int) -> Any | None:
        """`x` on the real values, from the latest source before record `before` that holds it."""
        import torch

        for i in reversed(range(before)):
            span = _within(x, self.records[i].result)
            if span is not None:
                source = self.of_record(i)
                return None if source is None else torch.as_strided(source, x.size(), x.stride(), span)
        for t, was in self.handed:
            span = _within(x, t)
            if span is not None:
                return torch.as_strided(_laid_out_as(was.to(t.device), t), x.size(), x.stride(), span)
        return None

    def of_record(self, i: int) -> Any | None:
        """Record i's result on the real values, laid out as the recorded one (None: an argument has none)."""
        if i in self.replayed:
            return self.replayed[i]
        self.replayed[i] = None  # an argument that comes back to this record has none
        rec = self.records[i]
        schema = rec.func._schema.arguments
        written = {a.name for a in schema if a.alias_info is not None and a.alias_info.is_write}
        outs = {a.name for a in schema if a.is_out}  # at::softmax_out's buffer: the function's own, any will do
        names = [a.name for a in schema]

        def real(name: str, v: Any) -> Any:
            return _like(v) if name in outs else self._real(v, i, name in written)

        try:
            args = tuple(real(names[k] if k < len(names) else "", v) for k, v in enumerate(rec.args))
            kwargs = {k: real(k, v) for k, v in rec.kwargs.items()}
            out = rec.func(*args, **kwargs)
        except LookupError:
            return None
        value = out if rec.index is None else out[rec.index]
        self.replayed[i] = _laid_out_as(value, rec.result)
        return self.replayed[i]

    def _real(self, value: Any, before: int, written: bool) -> Any:
        """An argument of record `before` on the real values (tensors in lists too). A tensor the
        operator writes is a copy, so the replay never changes a kept copy or an earlier replay."""
        import torch

        if isinstance(value, torch.Tensor):
            real = self.of(value, before)
            if real is None:
                raise LookupError
            return real.clone() if written else real
        if isinstance(value, (list, tuple)):
            return type(value)(self._real(v, before, written) for v in value)
        return value


def _like(value: Any) -> Any:
    """A fresh tensor (or list of them) shaped as `value`."""
    import torch

    if isinstance(value, torch.Tensor):
        return torch.empty_like(value)
    return type(value)(_like(v) for v in value) if isinstance(value, (list, tuple)) else value


def _laid_out_as(value: Any, like: Any) -> Any:
    """`value` with `like`'s strides and storage offset 0, so an offset into `like`'s memory names
    the same element in it."""
    import torch

    if value.stride() == like.stride() and value.storage_offset() == 0:
        return value
    out = torch.empty_strided(like.size(), like.stride(), dtype=like.dtype, device=like.device)
    out.copy_(value)
    return out
