"""Inside the worker: build/load → correctness and integrity → timing, for one candidate.

The Runner is created once per worker process. It patches the extension loader for the
compile cache, then installs the integrity guards (which wrap the patched loader), and
only then imports candidates. Each stage is announced to the engine so it can show
progress and apply the timeout to the right part.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
import types
from typing import Any, Callable

from htam_engine.evaluate import baselines, pch
from htam_engine.evaluate.cache import atomic_write_text, build_dir, built_marker, cache_dir, file_lock
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.devicelock import DeviceLock
from htam_engine.evaluate.diagnostics import exception_messages, one_line, parse_compiler_output, trim_log
from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.evaluate.timing import time_forward

Send = Callable[[dict[str, Any]], None]

# Statuses after which the worker process is still trustworthy for the next candidate.
_REUSABLE = {Status.OK, Status.INCORRECT, Status.COMPILE_ERROR}
# torch's message when ninja/the compiler failed (as opposed to a Python error at import).
_BUILD_FAILED = "Error building extension"
_FAILED = ".htam-build-failed.json"


def release_memory(device: str) -> None:
    """Return what an evaluation left behind: cyclic garbage, and on CUDA the caching
    allocator's free blocks, so the next worker on the device can use them."""
    gc.collect()
    if device.startswith("cuda"):
        import torch

        with contextlib.suppress(Exception):  # a context broken by the candidate: the worker is retired anyway
            torch.cuda.empty_cache()


def warm_device(device: str) -> None:
    """Create the CUDA context, load the kernels every check uses and take torch's lazy
    imports, at worker start.

    Otherwise a fresh worker pays for them (seconds) in its first check, while it holds one
    of the GPU's few check slots, so with many new workers the queue grows by that much each.
    Failure is left for the first check to report."""
    import torch

    with contextlib.suppress(Exception):
        x = torch.randn(64, 64, device=device)
        y = torch.where(torch.isfinite(x), (x * 2 + 1).relu(), x).abs().amax()
        (torch.mm(x, x).sum() + y).item()
    warm_meta_ops()


def warm_meta_ops() -> None:
    """Take the imports of torch's first meta-device operations now.

    The checks draw a problem's inputs on the meta device to learn an unseen shape, and
    torch's Python implementations of those operations import sympy and torch._dynamo on
    first use: 2-3 s of a fresh worker's first check on the H200 box, and more while
    compiles load its cores."""
    import torch

    with contextlib.suppress(Exception), torch.device("meta"):
        (torch.randn(2, 2) * 2.0 + 1.0).relu()


class _CompileCache:
    """Routes every load_inline/load of the current candidate into its own per-hash build folder.

    The extension name gets the source hash appended, so two candidates that both call
    their extension "fused" never collide (in torch's per-process version table or on
    disk), and the same source maps to the same folder in every process: ninja finds the
    library up to date and nothing recompiles.
    """

    def __init__(self) -> None:
        self.key: str | None = None
        # Told before a shared precompiled header is built (or waited for), and after.
        self.on_pch: Callable[[bool], None] | None = None
        import torch.utils.cpp_extension as ce

        for fn_name in ("load_inline", "load"):
            original = getattr(ce, fn_name)
            setattr(ce, fn_name, self._wrap(original))

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(original)

        @functools.wraps(original)
        def routed(*args: Any, **kwargs: Any) -> Any:
            key = self.key
            if key is None:
                return original(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            name = f"{bound.arguments['name']}_{key}"
            folder = build_dir(key) / name
            folder.mkdir(parents=True, exist_ok=True)
            bound.arguments["name"] = name
            bound.arguments["build_directory"] = str(folder)
            _use_shared_pch(bound.arguments, self.on_pch)
            return original(*bound.args, **bound.kwargs)

        return routed


_CUDA_SUFFIXES = (".cu", ".cuh")


def _use_shared_pch(arguments: dict[str, Any], on_pch: Callable[[bool], None] | None) -> None:
    """Put the shared precompiled torch/extension.h first on a build's include path.

    load_inline always has a C++ host unit (its bindings); load has one when any source
    is not CUDA. The folder goes before the candidate's own include paths so gcc finds
    the precompiled header's folder first.
    """
    sources = arguments.get("sources")
    if sources is not None:  # load(name, sources, ...)
        files = [sources] if isinstance(sources, str) else list(sources)
        if all(str(f).endswith(_CUDA_SUFFIXES) for f in files):
            return
        with_cuda = bool(arguments.get("with_cuda")) or any(str(f).endswith(_CUDA_SUFFIXES) for f in files)
    else:
        with_cuda = bool(arguments.get("with_cuda")) or bool(arguments.get("cuda_sources"))
    building = False

    def on_build() -> None:
        nonlocal building
        building = True
        if on_pch is not None:
            on_pch(True)

    folder = pch.include_dir(arguments.get("extra_cflags"), with_cuda, str(arguments["name"]), on_build)
    if building and on_pch is not None:
        on_pch(False)
    if folder is None:
        return
    own = arguments.get("extra_include_paths") or []
    own = [own] if isinstance(own, str) else list(own)
    arguments["extra_include_paths"] = [str(folder), *own]


def _clear_stale_batons(folder: os.PathLike) -> None:
    """torch's build lock files left by a killed compile would make the next one wait forever.

    Called while holding this key's fcntl lock, so no live htam process owns them.
    """
    for root, _dirs, files in os.walk(folder):
        if "lock" in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, "lock"))


class Runner:
    def __init__(self, device: str, send: Send):
        self.device = device
        self.send = send
        self.compile_cache = _CompileCache()
        # The one-time header build is the harness's cost, not the candidate's: its own stage.
        self.compile_cache.on_pch = lambda building: self._stage("pch" if building else "compile")
        if device.startswith("cuda"):
            warm_device(device)  # before the guards: the driver's threads are the harness's
        # The device's locks, shared by every worker on it (devicelock.py); waiting is its own
        # stage (harness time: it does not count against the candidate's timeout).
        self.lock = DeviceLock(device, os.environ.get("HTAM_WORKER_LOCK") or f"time-{device.replace(':', '')}",
                               self._stage)
        from htam_engine.evaluate.checks import install_guards

        self.guards = install_guards(device)
        if hasattr(self.guards, "trust_current_threads"):
            self.guards.trust_current_threads()

    # ------------------------------------------------------------------ helpers
    def _stage(self, name: str) -> None:
        self.send({"t": "stage", "stage": name})

    def _import_candidate(self, code: str, key: str) -> tuple[types.ModuleType, str]:
        path = cache_dir() / "candidates" / f"candidate_{key}.py"
        if not path.exists() or path.read_text() != code:
            atomic_write_text(path, code)
        mod_name = f"htam_candidate_{key}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(mod_name, None)
            raise
        return module, str(path)

    # ------------------------------------------------------------------ pipeline
    def evaluate(self, problem: Any, code: str, config: EvalConfig, backend: str, key: str) -> tuple[EvalResult, bool]:
        """One candidate, start to finish. Returns the result and whether this process may be reused."""
        result = EvalResult(status=Status.OK, device=self.device, backend=backend)
        started = time.perf_counter()
        config = dataclasses.replace(config, device=self.device)  # "cuda:N" is this worker's only "cuda"
        try:
            self._run(problem, code, config, key, result)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the candidate's fault becomes a status, never a crash
            self._crashed(result, exc)
        finally:
            self.compile_cache.key = None
            sys.modules.pop(f"htam_candidate_{key}", None)
        late = self._verify_guards()
        if late:
            result.integrity.extend(f for f in late if f not in result.integrity)
            if any(f.severity == "reject" for f in late) and result.status in (Status.OK, Status.INCORRECT):
                result.status = Status.REJECTED
                result.correct = False
                result.diagnostics.message = late[0].message
        result.stages.total_s = time.perf_counter() - started
        healthy = result.status in _REUSABLE and not any(f.severity == "reject" for f in late)
        if self.device.startswith("cuda") and result.status is Status.RUNTIME_ERROR:
            healthy = False  # an illegal access poisons the CUDA context
        return result, healthy

    @staticmethod
    def _crashed(result: EvalResult, exc: BaseException) -> None:
        """An exception escaped a stage: the candidate's fault becomes a runtime error."""
        result.status = Status.RUNTIME_ERROR
        result.correct = False
        result.diagnostics.message = one_line(exc)
        result.diagnostics.log = trim_log(traceback.format_exc())

    def _verify_guards(self) -> list:
        try:
            return list(self.guards.verify())
        except Exception as exc:  # noqa: BLE001 - a guard that cannot verify is itself a finding
            from htam_engine.evaluate.result import Finding

            return [Finding(rule="guards", message=f"integrity guards could not verify: {one_line(exc)}")]

    def _run(self, problem: Any, code: str, config: EvalConfig, key: str, result: EvalResult) -> None:
        device = self.device
        # ---- build / load
        self._stage("compile")
        t0 = time.perf_counter()
        marker = built_marker(key)
        result.stages.compile_cached = marker.exists()
        failed = build_dir(key) / _FAILED
        if failed.exists() and self._replay_failure(failed, result):
            result.stages.compile_s = time.perf_counter() - t0
            return
        self.compile_cache.key = key
        try:
            with file_lock(f"build-{key}"):
                _clear_stale_batons(build_dir(key))
                module, path = self._import_candidate(code, key)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - anything raised while importing is a compile error
            result.stages.compile_s = time.perf_counter() - t0
            self._fail(result, Status.COMPILE_ERROR, f"candidate failed to build or import: {one_line(exc)}")
            result.diagnostics.compiler = exception_messages(exc, str(cache_dir() / "candidates" / f"candidate_{key}.py"))
            result.diagnostics.log = trim_log(f"{exc}\n\n{traceback.format_exc(limit=-6)}")
            if _BUILD_FAILED in str(exc):
                # The same source would fail the same way: remember it, never rebuild it.
                atomic_write_text(failed, json.dumps(result.to_dict()))
            return
        model_new = getattr(module, "ModelNew", None)
        result.stages.compile_s = time.perf_counter() - t0
        if not isinstance(model_new, type):
            self._fail(result, Status.COMPILE_ERROR, "candidate module defines no class ModelNew")
            return
        if not marker.exists():
            atomic_write_text(marker, path + "\n")

        # Compiles overlap across workers; on a GPU a few workers check at once and one times
        # at a time, so their inputs, outputs and models never fill its memory (devicelock.py).
        with self.lock.holding_state():
            try:
                self._check_and_time(problem, config, model_new, result)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - handled here so its traceback's
                self._crashed(result, exc)           # frames (models, inputs) are gone before the release
            release_memory(device)

    def _check_and_time(self, problem: Any, config: EvalConfig, model_new: type, result: EvalResult) -> None:
        """Correctness, integrity, baseline and timing of a built candidate. Models and inputs
        live only in this call's frame: they are freed when it returns."""
        lock = self.lock
        with lock.checking():
            ctx, report = self._check_or_fail(problem, config, model_new, result)
        if report is None and lock.slots > 1 and _out_of_memory(result):
            # Other workers' checks held part of the GPU's memory: check again with it alone.
            ctx = None
            release_memory(self.device)
            _clear_failure(result)
            with lock.timing():
                ctx, report = self._check(problem, config, model_new, result)
        if report is None:
            return
        with lock.timing():
            self._time(problem, config, ctx, report, result)

    def _check_or_fail(self, problem: Any, config: EvalConfig, model_new: type,
                       result: EvalResult) -> tuple[Any, Any]:
        """_check, with an exception it raises recorded in `result` (as _run would) rather than
        raised, so the caller can look at it (and check again after running out of memory)."""
        try:
            return self._check(problem, config, model_new, result)
        except Exception as exc:  # noqa: BLE001 - the candidate's fault becomes a status
            self._crashed(result, exc)
            return None, None

    def _check(self, problem: Any, config: EvalConfig, model_new: type, result: EvalResult) -> tuple[Any, Any]:
        """(context, report) of the correctness and integrity checks; report None when they failed."""
        from htam_engine.evaluate.checks import CheckContext, check_candidate
        from htam_engine.problems import instantiate, unseen_shape_overrides, with_overrides

        device = self.device
        self._stage("check")
        instance = instantiate(problem, device)
        t0 = time.perf_counter()
        unseen = None
        if config.check_unseen_shape:
            try:
                unseen = unseen_shape_overrides(problem)
            except Exception:  # noqa: BLE001 - no unseen shape for this problem; checks note its absence
                unseen = None
        ctx = CheckContext(
            instance=instance,
            model_new_cls=model_new,
            device=device,
            config=config,
            guards=self.guards,
            make_variant=lambda ov: instantiate(with_overrides(problem, ov), device),
            unseen_overrides=unseen,
        )
        report = check_candidate(ctx)
        result.stages.check_s = time.perf_counter() - t0
        result.integrity = list(report.findings)
        result.diagnostics.mismatch = report.mismatch
        if report.status is not Status.OK:
            self._fail(result, report.status, report.message or report.status.value)
            if report.status is Status.COMPILE_ERROR:  # a kernel built lazily, at its first call
                result.diagnostics.compiler = parse_compiler_output(report.message)
            return ctx, None
        result.correct = True
        return ctx, report

    def _time(self, problem: Any, config: EvalConfig, ctx: Any, report: Any, result: EvalResult) -> None:
        """Baselines, timing and the recheck after timing; the caller holds the device alone."""
        from htam_engine.evaluate.checks import recheck_after_timing

        device = self.device
        t0 = time.perf_counter()
        self._stage("baseline")
        base = self._baseline(problem, config, report)
        self._stage("time")
        batch: list[float] = []
        last = [time.monotonic()]

        def on_trial(ms: float) -> None:
            batch.append(ms)
            if time.monotonic() - last[0] > 0.25:
                self.send({"t": "trials", "ms": list(batch)})
                batch.clear()
                last[0] = time.monotonic()

        times = time_forward(report.new_model, report.timing_inputs, device,
                             warmup=config.warmup, trials=config.trials, on_trial=on_trial,
                             refresh=_input_refresher(ctx.instance, report.timing_inputs, config.seed))
        if batch:
            self.send({"t": "trials", "ms": list(batch)})
        result.stages.time_s = time.perf_counter() - t0
        # The timing loop ran the candidate far more often than the checks did: one more checked
        # call on fresh inputs catches a kernel that turns stale or cached after its first calls.
        late = recheck_after_timing(ctx, report)
        result.integrity.extend(late)
        serious = [f for f in late if f.severity != "warn"]
        if serious:
            self._fail(result, Status.REJECTED, serious[0].message)
            return
        result.timings = [round(x, 6) for x in times.ms]
        result.runtime_ms = times.median
        result.ref_runtime_ms = base.eager_ms
        result.compile_ref_runtime_ms = base.compile_ms
        if result.runtime_ms and result.runtime_ms > 0:
            if base.eager_ms:
                result.speedup_eager = base.eager_ms / result.runtime_ms
            if base.compile_ms:
                result.speedup_compile = base.compile_ms / result.runtime_ms

    def _baseline(self, problem: Any, config: EvalConfig, report: Any) -> baselines.Baseline:
        key = baselines.baseline_key(problem.source, dict(problem.overrides), self.device, config.warmup, config.trials)
        cached = baselines.lookup(key)
        want_compile = config.time_compile_baseline
        if cached and (not want_compile or cached.compile_note != "not measured"):
            return cached
        fresh = baselines.measure(report.ref_model, report.timing_inputs, self.device,
                                  warmup=config.warmup, trials=config.trials, with_compile=want_compile)
        if want_compile and hasattr(self.guards, "trust_current_threads"):
            # torch.compile starts its own compile-worker threads; they are the harness's, not the
            # candidate's (whose threads the checks already looked for before timing began).
            self.guards.trust_current_threads()
        baselines.store(key, fresh, problem_id=getattr(problem, "id", ""))
        return fresh

    @classmethod
    def _replay_failure(cls, failed: os.PathLike, result: EvalResult) -> bool:
        """Fill `result` from a cached build failure of this exact source; False if unreadable."""
        try:
            cached = EvalResult.from_dict(json.loads(open(failed).read()))
        except (OSError, ValueError, KeyError, TypeError):
            return False
        cls._fail(result, Status.COMPILE_ERROR, cached.diagnostics.message)
        result.diagnostics.compiler = cached.diagnostics.compiler
        result.diagnostics.log = cached.diagnostics.log
        result.stages.compile_cached = True
        return True

    @staticmethod
    def _fail(result: EvalResult, status: Status, message: str) -> None:
        result.status = status
        result.correct = False
        result.diagnostics.message = message



def _out_of_memory(result: EvalResult) -> bool:
    return result.status is Status.RUNTIME_ERROR and "out of memory" in result.diagnostics.message.lower()


def _clear_failure(result: EvalResult) -> None:
    """Forget a failed check's outcome before checking again."""
    result.status, result.correct = Status.OK, False
    result.integrity = []
    result.diagnostics.message, result.diagnostics.log, result.diagnostics.mismatch = "", "", None


# Distinct input sets the timing loop cycles through (drawn once, copied in outside the timed region).
TIMING_INPUT_SETS = 4


def _input_refresher(instance: Any, buffers: list[Any], seed: int) -> Callable[[int], None]:
    """refresh(i) writes input set i % TIMING_INPUT_SETS into the timing buffers, in place."""
    from htam_engine.evaluate.checks.inputs import draw, refill_in_place

    # Only the buffers' own first content needs a copy (the buffers get overwritten); drawn sets
    # are fresh tensors nothing else holds, so copying them would double the memory for nothing.
    pristine = [[b.clone() if hasattr(b, "clone") else b for b in buffers]]
    pristine += [draw(instance.get_inputs, seed + 7919 * (k + 1)) for k in range(TIMING_INPUT_SETS - 1)]

    def refresh(i: int) -> None:
        refill_in_place(buffers, pristine[i % len(pristine)])

    return refresh
