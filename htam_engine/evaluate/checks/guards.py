"""Early, cheap findings inside a sandbox: what the candidate changed in its own process.

They are advice, not the line of defence (the candidate can rewrite anything in its process,
these guards included; the judge's checks do not depend on them). What they give is a clear,
named reason early: the clock or synchronize patched, the harness's own functions or its
serializer replaced, torch's global settings changed, a thread the candidate started still
running after forward, a CUDA stream it created still busy.

Custom-kernel counting and switching lives in kernel_switch.py.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import sysconfig
import threading
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

from htam_engine.evaluate.result import Finding

# Namespaces whose callables must keep their identity: rule name for each. Every loaded
# module of the evaluation harness is added at snapshot time (harness_tamper).
_NAMESPACES: list[tuple[str, str]] = [
    ("time", "timer_tamper"),
    ("torch.cuda", "sync_tamper"),
    ("torch.cuda.Event", "sync_tamper"),
    ("torch.cuda.streams", "sync_tamper"),
    ("triton.testing", "timer_tamper"),
    ("threading.Thread", "harness_tamper"),
    ("msgpack", "harness_tamper"),
]
# Single attributes of namespaces too large to snapshot whole, which the harness relies on: the
# generators it seeds before every call (seeding.py binds them at import; replacing one is still
# a candidate reaching for the harness's pre-trial call).
_ATTRIBUTES: list[tuple[str, str, str]] = [
    ("torch", "manual_seed", "harness_tamper"),
    ("torch", "default_generator", "harness_tamper"),
    ("torch.random", "manual_seed", "harness_tamper"),
    ("random", "seed", "harness_tamper"),
    ("numpy.random", "seed", "harness_tamper"),
]
_HARNESS_PREFIXES = ("htam_engine.evaluate", "htam_engine.session.codec")


def _resolve(dotted: str) -> Any | None:
    """The object at a dotted path (module, then attributes), or None if absent."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj: Any = mod
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def _trusted_roots() -> tuple[str, ...]:
    """Folders whose code is the platform or the harness, never a candidate."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # htam_engine/evaluate
    roots.add(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # htam_engine
    return tuple(sorted(r.rstrip("/") + "/" for r in roots if r))


_TRUSTED_ROOTS = _trusted_roots()


def candidate_on_stack(trusted_files: frozenset[str] | set[str] = frozenset()) -> bool:
    """True when any frame on the current stack runs code outside the platform, the harness
    and `trusted_files` (the problem's own module: the reference runs under torch.compile)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_TRUSTED_ROOTS) or name.startswith("<frozen") or name in trusted_files):
            return True
        frame = frame.f_back
    return False


def native_thread_count() -> int | None:
    """Threads of this process as the OS sees them (catches _thread.start_new_thread too)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _callables(ns: Any) -> dict[str, Any]:
    """Every callable attribute in a module's or class's own dict (held, so ids stay unique)."""
    try:
        items = list(vars(ns).items())
    except TypeError:
        return {}
    return {k: v for k, v in items if callable(v) or isinstance(v, (staticmethod, classmethod, property))}


def _framework_wrapper(current: Any, original: Any) -> bool:
    """True when torch itself wrapped `original` (torch._dynamo wraps torch.manual_seed and
    nn.Module.__init__/__setstate__ once a compile runs): the wrapper's code lives in torch's
    package and reaches the original through __wrapped__ or its closure."""
    import torch

    root = os.path.dirname(torch.__file__) + "/"
    fn = current
    for _ in range(8):
        code = getattr(fn, "__code__", None)
        if code is None or not code.co_filename.startswith(root):
            return False
        cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if _filled(c)]
        inner = getattr(fn, "__wrapped__", None)
        if inner is original or any(c is original for c in cells):
            return True
        fn = inner if inner is not None else next((c for c in cells if callable(c)), None)
        if fn is None:
            return False
    return False


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _settings() -> dict[str, Any]:
    """torch's process-wide numerics and threading settings (the reference runs under them too)."""
    import torch

    getters: dict[str, Callable[[], Any]] = {
        "torch.get_num_threads()": torch.get_num_threads,
        "torch.get_default_dtype()": torch.get_default_dtype,
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision,
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled,
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "torch.backends.cudnn.enabled": lambda: torch.backends.cudnn.enabled,
        "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
    }
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, get in getters.items():
            try:
                out[name] = get()
            except Exception:  # a setting this torch build lacks
                continue
    return out


@dataclass(slots=True)
class Watched:
    """One namespace of the snapshot: its live attribute mapping (a module's dict, a class's
    mappingproxy) and the callables it held then, each under the rule its replacement breaks."""

    dotted: str
    mapping: Mapping[str, Any]
    attrs: tuple[str, ...]
    objs: list[Any]
    rules: tuple[str, ...]


class Guards:
    """Snapshot + thread and stream tracking. Use install_guards() rather than constructing one."""

    def __init__(self, device: str):
        self.device = device
        self._restore: list[Callable[[], None]] = []
        self._watched: list[Watched] = []
        self._settings: dict[str, Any] = {}
        self._trusted_threads: set[int] = set()
        self._trace = (sys.gettrace(), sys.getprofile())
        self._streams: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.installed = False

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, new)
        self._restore.append(lambda: setattr(owner, name, old))

    def _track_thread_starts(self) -> None:
        """Threads started with no candidate code on the stack (torch's compile pool, the
        sandbox's own helpers) are trusted; any other new thread is the candidate's."""
        original = threading.Thread.start
        trusted = self._trusted_threads

        def start(thread: threading.Thread) -> None:
            mine = not candidate_on_stack()
            original(thread)
            if mine and thread.ident is not None:
                trusted.add(thread.ident)

        functools.update_wrapper(start, original)
        self._patch(threading.Thread, "start", start)

    def _track_cuda_streams(self) -> None:
        """Register every new torch.cuda.Stream, so busy_streams() can query it after forward.

        The class keeps its identity (isinstance checks anywhere stay true): only its
        __new__ is wrapped. Views of existing streams (current_stream(), ExternalStream)
        are not registered.
        """
        import torch

        if not self.device.startswith("cuda") or not torch.cuda.is_available():
            return
        cls = torch.cuda.Stream
        original = cls.__dict__["__new__"]
        make = original.__func__ if isinstance(original, staticmethod) else original
        registry = self._streams

        def __new__(klass: type, *args: Any, **kwargs: Any) -> Any:
            s = make(klass, *args, **kwargs)
            if "stream_id" not in kwargs and "stream_ptr" not in kwargs:
                registry.add(s)
            return s

        functools.update_wrapper(__new__, make)
        self._patch(cls, "__new__", staticmethod(__new__))

    # -- snapshot -------------------------------------------------------------------------------
    def snapshot(self) -> None:
        """Remember the harness's functions and torch's settings as they are now (call once the
        sandbox's own imports and settings are done, before the candidate is imported)."""
        namespaces = list(_NAMESPACES)
        for name in list(sys.modules):
            if name.startswith(_HARNESS_PREFIXES):
                namespaces.append((name, "harness_tamper"))
                # The classes a harness module defines too: their methods are class attributes no
                # module's dict holds (Guards.verify replaced silenced every finding below).
                for attr, obj in list(vars(sys.modules[name]).items()):
                    if isinstance(obj, type) and getattr(obj, "__module__", None) == name:
                        namespaces.append((f"{name}.{attr}", "harness_tamper"))
        held: dict[str, tuple[Any, dict[str, tuple[str, Any]]]] = {}  # dotted -> (namespace, attr -> (rule, obj))
        for dotted, rule in namespaces:
            ns = _resolve(dotted)
            if ns is None or not hasattr(ns, "__dict__"):
                continue
            entries = held.setdefault(dotted, (ns, {}))[1]
            for attr, obj in _callables(ns).items():
                entries[attr] = (rule, obj)
        for dotted, attr, rule in _ATTRIBUTES:
            ns = _resolve(dotted)
            if ns is not None and attr in getattr(ns, "__dict__", {}):
                held.setdefault(dotted, (ns, {}))[1][attr] = (rule, vars(ns)[attr])
        self._watched = [Watched(dotted, vars(ns), tuple(entries), [obj for _, obj in entries.values()],
                                 tuple(rule for rule, _ in entries.values()))
                         for dotted, (ns, entries) in held.items() if entries]
        self._settings = _settings()
        self.trust_current_threads()

    def install(self) -> "Guards":
        if self.installed:
            return self
        self._track_cuda_streams()
        self._track_thread_starts()
        self.snapshot()
        self.installed = True
        return self

    def uninstall(self) -> None:
        """Undo every patch (newest first)."""
        while self._restore:
            self._restore.pop()()
        self.installed = False
        global _INSTALLED
        if _INSTALLED is self:
            _INSTALLED = None

    # -- threads and streams ------------------------------------------------------------------------
    def trust_current_threads(self) -> None:
        """Threads alive now belong to the harness (call after starting the sandbox's own threads)."""
        self._trusted_threads.clear()
        self._trusted_threads.update(t.ident for t in threading.enumerate() if t.ident is not None)

    def stray_threads(self) -> list[threading.Thread]:
        """Live threads started by candidate code since the guards were installed (or last trusted)."""
        return [t for t in threading.enumerate() if t.ident not in self._trusted_threads and t.is_alive()]

    def busy_streams(self) -> list[Any]:
        """Streams the candidate created that still have work queued. Call after the current
        stream's work has finished: a side stream joined into it is idle by then."""
        busy = []
        for s in list(self._streams):
            try:
                if not s.query():
                    busy.append(s)
            except Exception:
                continue
        return busy

    # -- verification ---------------------------------------------------------------------------------
    def verify(self) -> list[Finding]:
        """Findings for anything changed since the snapshot: patched functions, global settings,
        trace hooks, stray threads, side streams still running or left current."""
        findings: list[Finding] = []
        for w in self._watched:
            # Every attribute of the namespace looked up and compared by identity in C; the
            # attribute-by-attribute look only where one differs (a third of a millisecond per
            # call for ~850 callables the other way, on the sandbox's every call).
            if all(map(operator.is_, map(w.mapping.get, w.attrs), w.objs)):
                continue
            for attr, obj, rule in zip(w.attrs, w.objs, w.rules):
                current = w.mapping.get(attr)
                if current is not obj and not _framework_wrapper(current, obj):
                    findings.append(Finding(rule, f"{w.dotted}.{attr} was replaced or removed after the harness "
                                                  "started"))
        now = _settings()
        for name, before in self._settings.items():
            if name in now and now[name] != before:
                findings.append(Finding("global_setting", f"{name} changed from {before!r} to {now[name]!r}"))
        if (sys.gettrace(), sys.getprofile()) != self._trace:
            findings.append(Finding("tracing", "a trace or profile hook was installed (sys.settrace/setprofile)"))
        stray = self.stray_threads()
        if stray:
            names = ", ".join(t.name for t in stray[:3])
            findings.append(Finding("background_thread", f"{len(stray)} thread(s) started by the candidate still "
                                                         f"alive after forward returned: {names}"))
        if self._streams and self.busy_streams():
            findings.append(Finding("side_stream", "a CUDA stream the candidate created still had work running "
                                                   "after forward returned and the device was synchronized"))
        findings.extend(self.current_stream_findings())
        findings.extend(mode_stack_findings())
        return findings

    def current_stream_findings(self) -> list[Finding]:
        import torch

        if not self.device.startswith("cuda") or not torch.cuda.is_available():
            return []
        try:
            if torch.cuda.current_stream() != torch.cuda.default_stream():
                return [Finding("side_stream", "the candidate left a non-default CUDA stream current")]
        except Exception:
            return []
        return []


def mode_stack_findings() -> list[Finding]:
    """A TorchFunctionMode or TorchDispatchMode left on torch's mode stack after forward: it would
    intercept the harness's own torch calls (the copy of the output into the judge's buffer) and
    run the candidate's code there, after the clock stopped. The sandbox pushes none between calls."""
    import torch

    try:
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._device import DeviceContext

        # torch.set_default_device keeps torch's own DeviceContext on the stack: a setting, not
        # the candidate's code (its exact class only; a subclass could run anything)
        functions = [m for m in _get_current_function_mode_stack() if type(m) is not DeviceContext]
        left = len(functions), torch._C._len_torch_dispatch_stack()
    except Exception:  # a torch without these: nothing to check
        return []
    if any(left):
        return [Finding("harness_tamper", f"forward left {left[0]} torch function mode(s) and {left[1]} dispatch "
                                          "mode(s) on torch's mode stack: they would run the candidate's code inside "
                                          "the harness's own calls")]
    return []


_INSTALLED: Guards | None = None


def install_guards(device: str) -> Guards:
    """Install the process-wide guards once (idempotent) and return them.

    Call before the candidate module is imported: it cannot have patched anything the
    snapshot records.
    """
    global _INSTALLED
    if _INSTALLED is None or not _INSTALLED.installed:
        _INSTALLED = Guards(device).install()
    return _INSTALLED
