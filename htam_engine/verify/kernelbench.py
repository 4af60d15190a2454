"""KernelBench's verdict on a solution: its eval_kernel_against_ref run in a child process
(htam_engine.verify.kb_child) with a timeout, the result read back as JSON and checked field
by field (the child ran candidate code: nothing it wrote is taken on trust as an object)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import htam_engine
from htam_engine.errors import InputError, UsageError
from htam_engine.families import Backend
from htam_engine.verify.checkout import KernelBenchCheckout
from htam_engine.verify.settings import KernelBenchSettings

# KernelBench's backend names for htam's: it has no C++ backend; a load_inline module is
# exec'd the way its "cuda" backend does it.
KERNELBENCH_BACKEND = {Backend.CUDA: "cuda", Backend.TRITON: "triton", Backend.CPP: "cuda"}
LOG_TAIL_LINES = 30


@dataclass(frozen=True, slots=True)
class KernelBenchVerdict:
    """What KernelBench said. Times are its means over the timed trials, in ms (as it reports
    them: three significant digits); error says why it gave no verdict (timeout, crash, raised)."""

    compiled: bool = False
    correct: bool = False
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None
    runtime_stats: dict[str, float] = field(default_factory=dict)
    ref_runtime_stats: dict[str, float] = field(default_factory=dict)
    # its trial times (ms) where its timing module could be watched: the candidate's, the reference's
    runtime_trials: tuple[float, ...] = ()
    ref_runtime_trials: tuple[float, ...] = ()
    tolerance: float | None = None  # atol = rtol it compared with
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    log_tail: str = ""

    @property
    def speedup(self) -> float | None:
        if self.runtime_ms and self.ref_runtime_ms and self.correct:
            return self.ref_runtime_ms / self.runtime_ms
        return None

    @property
    def median_speedup(self) -> float | None:
        """The reference's median trial over the candidate's, where the trials came back: KernelBench
        reports means, which one slow trial (a launch landing late, a power cap) moves; htam reports
        medians."""
        if self.runtime_trials and self.ref_runtime_trials and self.correct:
            return statistics.median(self.ref_runtime_trials) / statistics.median(self.runtime_trials)
        return None

    @property
    def status(self) -> str:
        """One word for tables: correct, incorrect, compile_error or error."""
        if self.error:
            return "error"
        if not self.compiled:
            return "compile_error"
        return "correct" if self.correct else "incorrect"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "compiled": self.compiled, "correct": self.correct,
                "runtime_ms": self.runtime_ms, "ref_runtime_ms": self.ref_runtime_ms, "speedup": self.speedup,
                "runtime_stats": dict(self.runtime_stats), "ref_runtime_stats": dict(self.ref_runtime_stats),
                "runtime_trials": list(self.runtime_trials), "ref_runtime_trials": list(self.ref_runtime_trials),
                "median_speedup": self.median_speedup,
                "tolerance": self.tolerance, "metadata": dict(self.metadata), "error": self.error}


class UnreadableResult(ValueError):
    """The child's result file does not hold KernelExecResult's fields with their types."""


def _time(value: Any, name: str) -> float | None:
    """KernelBench's -1.0 means "not measured"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnreadableResult(f"{name} is {type(value).__name__}, not a number")
    return float(value) if math.isfinite(value) and value > 0 else None


def _stats(value: Any, name: str) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UnreadableResult(f"{name} is {type(value).__name__}, not a dict")
    return {str(k): float(v) for k, v in value.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def _trials(value: Any) -> tuple[tuple[float, ...], ...]:
    """The child's lists of trial times: a list of lists of positive numbers, or nothing."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, list) for t in value):
        raise UnreadableResult("trials is not a list of lists")
    return tuple(tuple(ms for ms in (_time(x, "a trial time") for x in t) if ms is not None) for t in value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise UnreadableResult(f"{name} is {type(value).__name__}, not a bool")
    return value


def verdict_from(doc: Any, log_tail: str = "") -> KernelBenchVerdict:
    """The verdict in the child's JSON document (see kb_child's docstring)."""
    if not isinstance(doc, dict):
        raise UnreadableResult("not a JSON object")
    if "error" in doc:
        return KernelBenchVerdict(error=str(doc["error"]), log_tail=log_tail)
    r = doc.get("result")
    if not isinstance(r, dict):
        raise UnreadableResult("no result object")
    metadata = r.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise UnreadableResult("metadata is not a dict")
    tolerance = doc.get("tolerance")
    trials = _trials(doc.get("trials"))
    return KernelBenchVerdict(
        compiled=_flag(r.get("compiled"), "compiled"),
        correct=_flag(r.get("correctness"), "correctness"),
        runtime_ms=_time(r.get("runtime"), "runtime"),
        ref_runtime_ms=_time(r.get("ref_runtime"), "ref_runtime"),
        runtime_stats=_stats(r.get("runtime_stats"), "runtime_stats"),
        ref_runtime_stats=_stats(r.get("ref_runtime_stats"), "ref_runtime_stats"),
        runtime_trials=trials[0] if trials else (),
        ref_runtime_trials=trials[1] if len(trials) > 1 else (),
        tolerance=float(tolerance) if isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool) else None,
        metadata={str(k): v for k, v in metadata.items()},
        log_tail=log_tail,
    )


def _child_env(device: str) -> dict[str, str]:
    """This environment, with htam importable in the child wherever it was imported from here."""
    root = str(Path(htam_engine.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        env.setdefault("TRITON_INTERPRET", "1")  # the only way Triton kernels run on a CPU
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def cuda_device(text: str | None) -> str:
    """The device to verify on: KernelBench's evaluation is CUDA-only (UsageError, exit 2, else)."""
    device = (text or "cuda").strip().lower()
    if not (device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())):
        raise UsageError(f"KernelBench's eval_kernel_against_ref runs on CUDA only: the device must be cuda or "
                         f"cuda:N, not {text!r}")
    import torch

    if not torch.cuda.is_available():
        raise UsageError("KernelBench's eval_kernel_against_ref runs on CUDA only, and no CUDA GPU is visible "
                         "on this machine")
    return device


def run_kernelbench(checkout: KernelBenchCheckout, reference_source: str, solution_source: str, backend: Backend,
                    device: str, settings: KernelBenchSettings) -> KernelBenchVerdict:
    """KernelBench's verdict on the solution. Raises InputError (exit 2) when the checkout
    cannot be imported (a missing module of its own, e.g. pydantic)."""
    with tempfile.TemporaryDirectory(prefix="htam-verify-") as tmp:
        work = Path(tmp)
        request = {"kernelbench_src": str(checkout.src), "reference": reference_source, "solution": solution_source,
                   "backend": KERNELBENCH_BACKEND[backend], "device": device, "settings": settings.to_dict(),
                   "result_path": str(work / "result.json")}
        (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
        log = work / "kernelbench.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "htam_engine.verify.kb_child", str(work / "request.json")],
                                    cwd=tmp, env=_child_env(device), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(timeout=settings.timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return KernelBenchVerdict(error=f"KernelBench's evaluation did not finish in {settings.timeout_s:g} s",
                                          log_tail=_tail(log))
        tail = _tail(log)
        try:
            doc = json.loads((work / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return KernelBenchVerdict(error=f"KernelBench's evaluation process {_describe_exit(code)} without a result",
                                      log_tail=tail)
    if isinstance(doc, dict) and "setup_error" in doc:
        raise InputError(f"{checkout.root}: cannot import KernelBench's evaluation ({doc['setup_error']})")
    try:
        return verdict_from(doc, tail)
    except UnreadableResult as exc:
        return KernelBenchVerdict(error=f"KernelBench's evaluation process wrote an unreadable result ({exc})",
                                  log_tail=tail)
