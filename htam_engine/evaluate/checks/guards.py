"""Process-wide guards, installed in the worker before any candidate code is imported.

Two jobs:
- count custom-kernel calls: functions of modules built by torch.utils.cpp_extension
  (load_inline / load) and Triton launches, so a forward that never reaches a kernel
  (pure PyTorch, or a try/except fallback) shows zero;
- remember what the harness relies on (timers, CUDA sync and events, torch's global
  settings, the harness's own functions, which threads exist) so that any change the
  candidate makes is reported by verify().
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
import threading
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from htam_engine.evaluate.result import Finding

# Namespaces whose callables must keep their identity: rule name for each.
_NAMESPACES: list[tuple[str, str]] = [
    ("time", "timer_tamper"),
    ("torch.cuda", "sync_tamper"),
    ("torch.cuda.Event", "sync_tamper"),
    ("torch.cuda.streams", "sync_tamper"),
    ("torch", "torch_tamper"),
    ("torch.Tensor", "torch_tamper"),
    ("torch._C.TensorBase", "torch_tamper"),
    ("torch.nn.Module", "torch_tamper"),
    ("torch.nn.functional", "torch_tamper"),
    ("torch.testing", "torch_tamper"),
    ("torch.random", "torch_tamper"),
    ("torch.utils.cpp_extension", "kernel_counting_tamper"),
    ("triton.runtime.jit.JITFunction", "kernel_counting_tamper"),
    ("triton.runtime.interpreter.InterpretedFunction", "kernel_counting_tamper"),
    ("triton.testing", "timer_tamper"),
    ("gc", "harness_tamper"),
    ("copy", "harness_tamper"),
    ("threading.Thread", "harness_tamper"),
]


@dataclass
class _Counter:
    extension_calls: int = 0
    triton_launches: int = 0

    @property
    def total(self) -> int:
        return self.extension_calls + self.triton_launches


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


def _current(dotted: str, attr: str) -> Any | None:
    ns = _resolve(dotted)
    return vars(ns).get(attr) if ns is not None and hasattr(ns, "__dict__") else None


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


def _instrument_module(module: types.ModuleType, counter: _Counter) -> None:
    """Replace each function of an extension module by a counting wrapper, in place."""
    for name in dir(module):
        if name.startswith("__"):
            continue
        fn = getattr(module, name, None)
        if not callable(fn) or isinstance(fn, type) or getattr(fn, "__htam_counted__", False):
            continue

        def counted(*args: Any, __fn: Callable = fn, **kwargs: Any) -> Any:
            out = __fn(*args, **kwargs)
            counter.extension_calls += 1  # only calls that returned: a failed try does not count
            return out

        functools.update_wrapper(counted, fn)
        counted.__htam_counted__ = True  # type: ignore[attr-defined]
        try:
            setattr(module, name, counted)
        except (AttributeError, TypeError):
            continue


class Guards:
    """Snapshot + instrumentation. Use install_guards() rather than constructing one."""

    def __init__(self, device: str):
        self.device = device
        self._counter = _Counter()
        self._restore: list[Callable[[], None]] = []
        self._identities: dict[tuple[str, str], tuple[str, Any]] = {}
        self._settings: dict[str, Any] = {}
        self._trusted_threads: set[int] = set()
        self._trusted_files: set[str] = set()
        self._trace = (sys.gettrace(), sys.getprofile())
        self._streams: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.installed = False

    # -- counting ---------------------------------------------------------------------------
    @property
    def kernel_calls(self) -> int:
        """Custom-kernel calls (extension functions + Triton launches) that returned, so far."""
        return self._counter.total

    @property
    def extension_calls(self) -> int:
        return self._counter.extension_calls

    @property
    def triton_launches(self) -> int:
        return self._counter.triton_launches

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, new)
        self._restore.append(lambda: setattr(owner, name, old))

    @property
    def extension_ops(self) -> frozenset[str]:
        """Qualified names ("ns::op") of operators that built extensions registered
        (TORCH_LIBRARY): their calls go through torch.ops, not the module's functions."""
        return frozenset().union(*_LIBRARY_OPS.values()) if _LIBRARY_OPS else frozenset()

    def _wrap_extension_loader(self) -> None:
        import torch
        import torch.utils.cpp_extension as ce

        original = ce._import_module_from_library
        counter = self._counter

        def _import_module_from_library(*args: Any, **kwargs: Any) -> Any:
            before = set(torch._C._dispatch_get_all_op_names())
            module = original(*args, **kwargs)
            added = {name.split(".")[0] for name in torch._C._dispatch_get_all_op_names()} - \
                {name.split(".")[0] for name in before}
            if added:  # a library loads once per process: remember its operators for good
                _LIBRARY_OPS[repr(args[:2])] = frozenset(added)
            if isinstance(module, types.ModuleType):
                _instrument_module(module, counter)
            return module

        functools.update_wrapper(_import_module_from_library, original)
        self._patch(ce, "_import_module_from_library", _import_module_from_library)

    def _wrap_triton(self) -> None:
        try:
            import triton.runtime.jit as jit
        except Exception:  # no triton on this machine: nothing to count
            return
        classes: list[type] = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except Exception:
            pass
        counter = self._counter
        for cls in classes:
            original = cls.__dict__.get("run")
            if original is None:
                continue

            def run(self_: Any, *args: Any, __orig: Callable = original, **kwargs: Any) -> Any:
                out = __orig(self_, *args, **kwargs)
                if not kwargs.get("warmup", False):
                    counter.triton_launches += 1
                return out

            functools.update_wrapper(run, original)
            self._patch(cls, "run", run)

    def _track_thread_starts(self) -> None:
        """Threads started with no candidate code on the stack (torch's compile pool, the
        worker's own helpers) are trusted; any other new thread is the candidate's."""
        original = threading.Thread.start
        trusted = self._trusted_threads

        files = self._trusted_files

        def start(thread: threading.Thread) -> None:
            mine = not candidate_on_stack(files)
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
    def _snapshot(self) -> None:
        namespaces = list(_NAMESPACES)
        for name in list(sys.modules):
            if name.startswith("htam_engine"):
                namespaces.append((name, "harness_tamper"))
        self._identities = {}
        for dotted, rule in namespaces:
            ns = _resolve(dotted)
            if ns is None:
                continue
            for attr, obj in _callables(ns).items():
                self._identities[(dotted, attr)] = (rule, obj)
        self._settings = _settings()
        self.trust_current_threads()

    def install(self) -> "Guards":
        if self.installed:
            return self
        self._wrap_extension_loader()
        self._wrap_triton()
        self._track_cuda_streams()
        self._track_thread_starts()
        self._snapshot()
        self.installed = True
        return self

    def uninstall(self) -> None:
        """Undo every patch (newest first); extension modules already built stay counted."""
        while self._restore:
            self._restore.pop()()
        self.installed = False
        global _INSTALLED
        if _INSTALLED is self:
            _INSTALLED = None

    # -- threads and streams ------------------------------------------------------------------------
    def trust_current_threads(self) -> None:
        """Threads alive now belong to the harness (call after starting the worker's own threads)."""
        self._trusted_threads.clear()
        self._trusted_threads.update(t.ident for t in threading.enumerate() if t.ident is not None)

    def trust_code_of(self, *objects: Any) -> None:
        """Code in the files defining these (the problem's Model, get_inputs) is the reference's:
        threads started while it is on the stack (a torch.compile of it) are not the candidate's."""
        for obj in objects:
            fn = getattr(obj, "forward", obj)
            code = getattr(fn, "__code__", None)
            if code is not None and not code.co_filename.startswith("<"):
                self._trusted_files.add(code.co_filename)

    @contextlib.contextmanager
    def trusted(self) -> Iterator[None]:
        """Harness work that may start threads or let torch wrap functions (a torch.compile
        baseline: inductor's compile pool, dynamo's wrappers): what changes inside the block
        is accepted. Changes made before it (by a candidate) stay reported."""
        threads = {t.ident for t in threading.enumerate()}
        current = {key: _current(dotted, attr) for key in self._identities for dotted, attr in [key]}
        settings = _settings()
        try:
            yield
        finally:
            self._trusted_threads |= {t.ident for t in threading.enumerate() if t.ident not in threads}
            for key, before in current.items():
                now = _current(*key)
                if now is not before:
                    self._identities[key] = (self._identities[key][0], now)
            now_settings = _settings()
            for name, value in settings.items():
                if now_settings.get(name) != value and self._settings.get(name) == value:
                    self._settings[name] = now_settings.get(name)

    def stray_threads(self) -> list[threading.Thread]:
        """Live threads started after the guards were installed (or last trusted)."""
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
        """Findings for anything changed since install: patched functions, global settings,
        trace hooks, stray threads, side streams still running or left current."""
        findings: list[Finding] = []
        for (dotted, attr), (rule, obj) in self._identities.items():
            current = _current(dotted, attr)
            if current is not obj and not _framework_wrapper(current, obj):
                findings.append(Finding(rule, f"{dotted}.{attr} was replaced or removed after the harness started"))
        now = _settings()
        for name, before in self._settings.items():
            if name in now and now[name] != before:
                findings.append(Finding("global_setting", f"{name} changed from {before!r} to {now[name]!r}"))
        if (sys.gettrace(), sys.getprofile()) != self._trace:
            findings.append(Finding("tracing", "a trace or profile hook was installed (sys.settrace/setprofile)"))
        stray = self.stray_threads()
        if stray:
            names = ", ".join(t.name for t in stray[:3])
            findings.append(Finding("background_thread", f"{len(stray)} thread(s) started by the candidate still alive: {names}"))
        busy = self._unjoined_streams()
        if busy:
            findings.append(Finding("side_stream", f"{len(busy)} CUDA stream(s) created by the candidate still have work running"))
        findings.extend(self.current_stream_findings())
        return findings

    def _unjoined_streams(self) -> list[Any]:
        import torch

        if not self._streams or not torch.cuda.is_available():
            return []
        try:
            torch.cuda.current_stream().synchronize()
        except Exception:
            return []
        return self.busy_streams()

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


_INSTALLED: Guards | None = None
# Operators each loaded extension registered, kept across Guards instances (a shared
# library's registrations run once per process, at its first load).
_LIBRARY_OPS: dict[str, frozenset[str]] = {}


def install_guards(device: str) -> Guards:
    """Install the process-wide guards once (idempotent) and return them.

    Call before the candidate module is imported: it must see the counted loaders and
    cannot have patched anything the snapshot records.
    """
    global _INSTALLED
    if _INSTALLED is None or not _INSTALLED.installed:
        _INSTALLED = Guards(device).install()
    return _INSTALLED
