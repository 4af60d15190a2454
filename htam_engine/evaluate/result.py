"""The evaluation result: the one record every part of htam reads.

`EvalResult.to_dict()` is the `htam eval --json` document and what sessions
store; `from_dict` reads it back. Field names are part of the CLI contract.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Status(str, Enum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    INCORRECT = "incorrect"
    TIMEOUT = "timeout"
    REJECTED = "rejected"


@dataclass(slots=True)
class CompilerMessage:
    """One compiler diagnostic, parsed where possible."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    severity: str = "error"  # error | warning | note


@dataclass(slots=True)
class Mismatch:
    """Why outputs did not match: enough to fix the kernel without rerunning."""

    max_abs_error: float
    max_rel_error: float
    where: list[int] | None  # index of the worst element
    expected_shape: list[int] | None
    actual_shape: list[int] | None
    expected_dtype: str | None
    actual_dtype: str | None
    input_set: str = ""  # which input set failed: "get_inputs#2", "unseen-shape", "signed-normal"...
    note: str = ""


@dataclass(slots=True)
class Finding:
    """An integrity finding: what the harness saw the candidate do."""

    rule: str  # e.g. "no_kernel", "caching", "input_mutation", "timer_tamper"
    message: str
    severity: str = "reject"  # reject | incorrect | warn


@dataclass(slots=True)
class Diagnostics:
    compiler: list[CompilerMessage] = field(default_factory=list)
    mismatch: Mismatch | None = None
    message: str = ""  # one-line summary of what went wrong, if anything
    log: str = ""  # trimmed compiler / runtime output


@dataclass(slots=True)
class StageTimes:
    """Wall time of each evaluation stage, in seconds."""

    static_s: float = 0.0
    compile_s: float = 0.0
    check_s: float = 0.0
    time_s: float = 0.0
    total_s: float = 0.0
    compile_cached: bool = False


@dataclass(slots=True)
class EvalResult:
    status: Status
    correct: bool = False
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None
    compile_ref_runtime_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    integrity: list[Finding] = field(default_factory=list)
    device: str = "cpu"
    backend: str = ""
    timings: list[float] = field(default_factory=list)  # per-trial candidate times, ms
    stages: StageTimes = field(default_factory=StageTimes)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        diag = dict(d.get("diagnostics") or {})
        mm = diag.get("mismatch")
        diagnostics = Diagnostics(
            compiler=[CompilerMessage(**m) for m in diag.get("compiler", [])],
            mismatch=Mismatch(**mm) if mm else None,
            message=diag.get("message", ""),
            log=diag.get("log", ""),
        )
        return cls(
            status=Status(d["status"]),
            correct=bool(d.get("correct", False)),
            runtime_ms=d.get("runtime_ms"),
            ref_runtime_ms=d.get("ref_runtime_ms"),
            compile_ref_runtime_ms=d.get("compile_ref_runtime_ms"),
            speedup_eager=d.get("speedup_eager"),
            speedup_compile=d.get("speedup_compile"),
            diagnostics=diagnostics,
            integrity=[Finding(**f) for f in d.get("integrity", [])],
            device=d.get("device", "cpu"),
            backend=d.get("backend", ""),
            timings=list(d.get("timings", [])),
            stages=StageTimes(**(d.get("stages") or {})),
        )

    @classmethod
    def failure(cls, status: Status, message: str, **kw: Any) -> "EvalResult":
        r = cls(status=status, **kw)
        r.diagnostics.message = message
        return r
