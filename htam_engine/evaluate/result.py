"""The evaluation result: the one record every part of htam reads.

`EvalResult.to_dict()` is the `htam eval --json` document and what sessions
store; `from_dict` reads it back through the one validating decoder (session/codec.py),
the same one session files use. Field names are part of the CLI contract.
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
    # The harness could not evaluate (out of memory in the judge, no device, no toolchain,
    # a sandbox that would not start): says nothing about the candidate.
    HARNESS_ERROR = "harness_error"

    @property
    def blames_candidate(self) -> bool:
        """True for a failure that is the candidate's own (what memory learning may count)."""
        return self not in (Status.OK, Status.HARNESS_ERROR)


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
    """Wall time of each evaluation stage, in seconds (and the judge's own GPU memory peak)."""

    static_s: float = 0.0
    compile_s: float = 0.0
    check_s: float = 0.0
    # Of check_s, the candidate's first call (Go to reply): a Triton kernel compiles at its first
    # launch, so on a GPU this is mostly the kernels' compile, done holding units of the device.
    first_call_s: float = 0.0
    time_s: float = 0.0
    total_s: float = 0.0
    compile_cached: bool = False
    baseline_s: float = 0.0  # preparing the reference sandbox (build, torch.compile, warm-up)
    reference_reused: bool = False  # the reference sandbox of an earlier evaluation timed the baselines
    # Of the stages above: waiting for the device (its memory's units, its locks) behind other
    # evaluations, and holding it alone (timed runs): the queue's cost, and this evaluation's share
    # of the serialized part of a pool's work.
    lock_wait_s: float = 0.0
    device_alone_s: float = 0.0
    # The judge process's own peak GPU memory over the evaluation (torch's allocator: allocated, and
    # reserved by its cache), GiB; None on the CPU. Sandboxes are not included.
    gpu_peak_allocated_gib: float | None = None
    gpu_peak_reserved_gib: float | None = None


@dataclass(slots=True)
class Spread:
    """The distribution of one series of timed trials, in milliseconds."""

    n: int = 0
    min_ms: float = 0.0
    q1_ms: float = 0.0
    median_ms: float = 0.0
    q3_ms: float = 0.0
    max_ms: float = 0.0


@dataclass(slots=True)
class ClockCheck:
    """The judge's wall clock against the sandbox's reported trial times (the clock rule).

    overhead = judge's send-to-reply wall time minus the reported trial time, per trial; the
    candidate's median overhead may exceed the clean reference sandbox's by at most margin_ms.
    """

    candidate_overhead_ms: float = 0.0
    reference_overhead_ms: float = 0.0
    margin_ms: float = 0.0
    floor_ms: float = 0.0  # writing the outputs once at the device's measured copy bandwidth


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
    runtime_spread: Spread | None = None
    ref_spread: Spread | None = None
    compile_ref_spread: Spread | None = None
    clock: ClockCheck | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        """The result a `to_dict()` gave; codec.CodecError (a ValueError) for data of the wrong shape."""
        from htam_engine.session import codec  # sessions import this module: import late

        return codec.decode(cls, d)

    @classmethod
    def failure(cls, status: Status, message: str, **kw: Any) -> "EvalResult":
        r = cls(status=status, **kw)
        r.diagnostics.message = message
        return r
