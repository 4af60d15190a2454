"""Evaluating a candidate from the engine's side: static checks, then a judge does the rest.

`Evaluator` owns one worker slot: it starts a judge process on first use and reuses it while it
reports itself healthy (a judge never runs candidate code, so a candidate's crash, hang or
cheat costs its sandbox, not the judge). `evaluate()` is the synchronous convenience over a
process-wide Evaluator.

Progress: `on_progress(stage, timings)` is called with `Stage` values (a str enum), in order:
static, compile (within it pch while the shared precompiled torch header for the candidate's
flags is built once, then compile again), check, baseline (the reference sandbox builds,
compiles and warms up), wait_lock (waiting for the device's timing lock), time (repeated, with
the per-trial times so far), check again (the work check after timing) and finally done; a
failed evaluation jumps to done. On a CUDA device the judge also waits for the units of the GPU's
memory its evaluation needs (judges share the memory by size, see devicelock.py), so wait_lock
also comes right after compile.
"""

from __future__ import annotations

import atexit
import threading
import time
from importlib import metadata
from typing import Any, Callable

from htam_engine.evaluate.backend import resolve_backend
from htam_engine.evaluate.cache import candidate_key
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.process import (
    BACKSTOP_S,
    WorkerCrash,
    WorkerMemory,
    WorkerProcess,
    WorkerStartError,
    WorkerTimeout,
    default_memory_limit_mb,
)
from htam_engine.evaluate.protocol import ProtocolError
from htam_engine.evaluate.result import EvalResult, Finding, Status
from htam_engine.evaluate.stages import Stage, parse_stage

Progress = Callable[[Stage, list[float]], None]
# The engine's backstop on a judge's tree: twice the candidate's limits plus room for the judge's
# own work (the judge applies the candidate's limits to its sandbox itself).
BACKSTOP_MEMORY_MB = 2048.0


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "unknown"


def _as_problem(problem: Any, config: EvalConfig) -> Any:
    if isinstance(problem, str):
        from htam_engine.problems import load_problem

        return load_problem(problem, dict(config.overrides) or None, device=config.device)
    return problem


def _with_output(result: EvalResult, output: str) -> EvalResult:
    output = output.strip()
    if output:
        sep = "\n\n--- worker output ---\n" if result.diagnostics.log else ""
        result.diagnostics.log = f"{result.diagnostics.log}{sep}{output}"
    return result


class Evaluator:
    """One worker slot. Not thread-safe: one evaluation at a time (the pool runs several slots)."""

    def __init__(self, device: str | None = None, judges_on_device: int | None = None):
        self.device = device  # None: each evaluation uses config.device
        # how many judges share its device (a pool's slots on it): the judge's share of memory
        # for the others' contexts (devicelock.usable_memory); None: not known
        self.judges_on_device = judges_on_device
        self._worker: WorkerProcess | None = None
        self._lock = threading.Lock()
        self.workers_started = 0

    @property
    def worker_pid(self) -> int | None:
        return self._worker.pid if self._worker and self._worker.alive() else None

    def _ensure_worker(self, device: str) -> WorkerProcess:
        w = self._worker
        if w is not None and (not w.alive() or w.device != device):
            w.kill()
            w = self._worker = None
        if w is None:
            w = WorkerProcess(device, self.judges_on_device)
            self._worker = w
            self.workers_started += 1
            try:
                w.start()
            except WorkerStartError:
                self._worker = None
                raise
        return w

    def warm(self, config: EvalConfig | None = None) -> None:
        """Start the worker now (torch import and guards take seconds), so the first evaluation
        under `config` does not wait for it. A start failure surfaces at that evaluation."""
        config = config or EvalConfig()
        device = self.device or config.device
        with self._lock:
            try:
                self._ensure_worker(device)
            except WorkerStartError:
                pass

    def discard_worker(self) -> None:
        """Kill the current worker (a cancelled evaluation, or close)."""
        w, self._worker = self._worker, None
        if w is not None:
            w.kill()

    def close(self) -> None:
        w, self._worker = self._worker, None
        if w is not None:
            w.close()

    def evaluate(self, problem: Any, code: str, config: EvalConfig | None = None,
                 on_progress: Progress | None = None) -> EvalResult:
        with self._lock:
            return self._evaluate(problem, code, config or EvalConfig(), on_progress)

    def _evaluate(self, problem: Any, code: str, config: EvalConfig, on_progress: Progress | None) -> EvalResult:
        started = time.perf_counter()
        device = self.device or config.device
        problem = _as_problem(problem, config)
        backend = resolve_backend(code, config.backend, device)

        def progress(stage: Stage, timings: list[float] | None = None) -> None:
            if on_progress:
                on_progress(stage, list(timings or []))

        # ---- static checks, here in the engine: nothing of the candidate runs yet
        progress(Stage.STATIC)
        from htam_engine.evaluate.checks import static_findings

        try:
            static = list(static_findings(code, backend))
        except Exception as exc:  # noqa: BLE001 - a scanner fault must not hide the runtime checks
            static = [Finding(rule="static", message=f"static checks failed: {exc}", severity="warn")]
        static_s = time.perf_counter() - started
        rejects = [f for f in static if f.severity == "reject"]
        if rejects:
            status = Status.COMPILE_ERROR if rejects[0].rule == "no_model_new" else Status.REJECTED
            result = EvalResult.failure(status, rejects[0].message, integrity=static, device=device, backend=backend)
            return self._finish(result, started, static_s, progress)

        memory_cap = float(config.memory_limit_mb or default_memory_limit_mb())
        key = candidate_key(code, backend, device.split(":")[0], _torch_version())
        timings: list[float] = []

        def on_message(msg: dict[str, Any]) -> None:
            kind = msg.get("t")
            stage = parse_stage(msg.get("stage"))
            if kind == "stage" and stage is not None:
                progress(stage, timings)
            elif kind == "trials" and isinstance(msg.get("ms"), list):
                if msg.get("from_start") is True:  # the judge timed the candidate again
                    timings.clear()
                timings.extend(float(x) for x in msg["ms"] if isinstance(x, (int, float)))
                progress(Stage.TIME, timings)

        request = {"op": "eval", "problem": problem, "code": code, "config": config, "backend": backend, "key": key,
                   "memory_mb": memory_cap}
        worker: WorkerProcess | None = None
        try:
            worker = self._ensure_worker(device)
            exchange = worker.request(request, timeout_s=2 * float(config.timeout_s) + BACKSTOP_S,
                                      memory_limit_mb=2 * memory_cap + BACKSTOP_MEMORY_MB, on_message=on_message)
            result = EvalResult.from_dict(exchange.reply["result"])
            healthy = exchange.reply.get("healthy") is True
        except WorkerStartError as exc:
            result = EvalResult.failure(Status.HARNESS_ERROR, str(exc), device=device, backend=backend)
            result.diagnostics.log = exc.log
            healthy = False
        except (WorkerTimeout, WorkerCrash, WorkerMemory) as exc:
            # The judge times the candidate out and limits its memory itself: these are the judge's.
            result = EvalResult.failure(Status.HARNESS_ERROR, str(exc), device=device, backend=backend)
            healthy = False
        except (ProtocolError, KeyError, TypeError, ValueError) as exc:
            result = EvalResult.failure(Status.HARNESS_ERROR, f"the judge sent a malformed result ({exc})",
                                        device=device, backend=backend)
            healthy = False
        if worker is not None:
            _with_output(result, worker.log.text())
        if not result.timings and timings and result.status is not Status.OK:
            result.timings = timings
        result.integrity = [*static, *(f for f in result.integrity if f not in static)]
        result.device, result.backend = device, backend
        if not healthy:
            self.discard_worker()
        return self._finish(result, started, static_s, progress)

    @staticmethod
    def _finish(result: EvalResult, started: float, static_s: float, progress: Callable[..., None]) -> EvalResult:
        result.stages.static_s = static_s
        result.stages.total_s = time.perf_counter() - started
        progress(Stage.DONE, result.timings)
        return result


_shared: dict[str, Evaluator] = {}
_shared_lock = threading.Lock()


def evaluate(problem: Any, code: str, config: EvalConfig | None = None, on_progress: Progress | None = None) -> EvalResult:
    """Evaluate one candidate synchronously, reusing a process-wide worker per device.

    `problem` is a Problem or a problem reference (path or built-in name, loaded under
    config.overrides). Never raises for anything the candidate does; bad arguments
    (an unknown backend, an unloadable problem) raise ValueError or ProblemError.
    """
    config = config or EvalConfig()
    with _shared_lock:
        ev = _shared.setdefault(config.device, Evaluator(config.device))
    return ev.evaluate(problem, code, config, on_progress)


@atexit.register
def close_shared() -> None:
    """Stop the process-wide workers (also run at interpreter exit: no orphans)."""
    with _shared_lock:
        for ev in _shared.values():
            ev.close()
        _shared.clear()
