"""The coarse state the selector conditions on: status, family, bottleneck, speedup bucket.

One place for: the speedup buckets, the status vocabulary of a State, the state
similarity used by transition attention, and the bottleneck estimate (counted
bytes and FLOPs against device ceilings).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from htam_engine.evaluate.result import Status
from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory.types import State
from htam_engine.problems.model import Problem

# (upper bound exclusive, name), ascending; speedups at or above the last bound are ">2".
SPEEDUP_BUCKETS: tuple[tuple[float, str], ...] = ((0.5, "<0.5"), (1.0, "0.5-1"), (1.5, "1-1.5"), (2.0, "1.5-2"))
TOP_BUCKET = ">2"
NO_SPEEDUP = "none"

FAILURE_STATUSES = frozenset(s.value for s in Status if s is not Status.OK)
# Status of a State: "start", a failure status, or "slower"/"faster" for a correct candidate.
STATE_STATUSES = ("start", *sorted(FAILURE_STATUSES), "slower", "faster")


def speedup_bucket(speedup: float | None) -> str:
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return NO_SPEEDUP
    for bound, name in SPEEDUP_BUCKETS:
        if speedup < bound:
            return name
    return TOP_BUCKET


def state_status(status: str | Status | None, speedup: float | None) -> str:
    """Map an evaluation status (or "start") to the State's status vocabulary."""
    s = status.value if isinstance(status, Status) else (status or "start")
    if s in ("ok", "faster", "slower"):
        return "faster" if speedup is not None and speedup > 1.0 else "slower"
    return s


def make_state(status, family, backend, bottleneck, speedup: float | None) -> State:
    return State(
        status=state_status(status, speedup),
        family=Family(family),
        bottleneck=Bottleneck(bottleneck),
        speedup_bucket=speedup_bucket(speedup),
        backend=Backend(backend),
    )


# Weights of the state features in similarity(); they sum to 1.
_SIM_WEIGHTS = {"status": 0.35, "family": 0.25, "bottleneck": 0.2, "speedup": 0.1, "backend": 0.1}


def similarity(a: State, b: State) -> float:
    """Similarity in [0, 1] of two states; two different failures count half a status match."""
    if a.status == b.status:
        st = 1.0
    elif a.status in FAILURE_STATUSES and b.status in FAILURE_STATUSES:
        st = 0.5
    else:
        st = 0.0
    return (
        _SIM_WEIGHTS["status"] * st
        + _SIM_WEIGHTS["family"] * (a.family == b.family)
        + _SIM_WEIGHTS["bottleneck"] * (a.bottleneck == b.bottleneck)
        + _SIM_WEIGHTS["speedup"] * (a.speedup_bucket == b.speedup_bucket)
        + _SIM_WEIGHTS["backend"] * (a.backend == b.backend)
    )


@dataclass(slots=True, frozen=True)
class DeviceCeilings:
    """Throughput limits a kernel is compared against."""

    bandwidth_bytes_s: float
    flops_s: float
    launch_s: float  # fixed cost of one kernel launch plus the Python forward around it


# Conservative nominal figures; a measured table can be passed to estimate_bottleneck.
CEILINGS: dict[str, DeviceCeilings] = {
    "cuda": DeviceCeilings(bandwidth_bytes_s=3.0e12, flops_s=5.0e13, launch_s=8e-6),
    "cpu": DeviceCeilings(bandwidth_bytes_s=1.5e10, flops_s=1.0e11, launch_s=5e-6),
}

_DTYPE_BYTES = {
    "float64": 8, "double": 8, "int64": 8, "long": 8, "complex64": 8,
    "float32": 4, "float": 4, "int32": 4, "int": 4,
    "float16": 2, "half": 2, "bfloat16": 2, "int16": 2,
    "int8": 1, "uint8": 1, "bool": 1,
}
_TENSOR_FREE = {"int", "float", "bool", "str", "none"}  # non-tensor arguments in TensorSpec.dtype


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= max(int(d), 0)
    return n


def counted_work(problem: Problem) -> tuple[float, float]:
    """(bytes moved, FLOPs) of the reference, estimated from the input specs and the family."""
    tensors = [t for t in problem.inputs if t.dtype not in _TENSOR_FREE and t.shape]
    if not tensors:
        return 0.0, 0.0
    in_bytes = sum(_numel(t.shape) * _DTYPE_BYTES.get(t.dtype, 4) for t in tensors)
    largest = max(tensors, key=lambda t: _numel(t.shape))
    out_bytes = _numel(largest.shape) * _DTYPE_BYTES.get(largest.dtype, 4)
    elems = sum(_numel(t.shape) for t in tensors)
    fam = problem.family
    if fam is Family.MATMUL and len(tensors) >= 2 and len(tensors[0].shape) >= 2 and len(tensors[1].shape) >= 2:
        a, b = tensors[0].shape, tensors[1].shape
        batch = _numel(a[:-2]) or 1
        m, k, n = a[-2], a[-1], b[-1]
        return in_bytes + batch * m * n * 4.0, 2.0 * batch * m * n * k
    if fam in (Family.CONVOLUTION, Family.ATTENTION, Family.WHOLE_MODEL):
        # Weights live in the module, not the inputs; assume a dense layer's reuse (~hundreds of FLOPs/element).
        return float(in_bytes + out_bytes), 256.0 * elems
    per_elem = {Family.NORMALIZATION: 8.0, Family.REDUCTION: 2.0, Family.FUSED_CHAIN: 6.0}.get(fam, 2.0)
    return float(in_bytes + out_bytes), per_elem * elems


def estimate_bottleneck(problem: Problem, runtime_ms: float | None, device: str,
                        ceilings: DeviceCeilings | None = None) -> Bottleneck:
    """Memory-, compute- or launch-bound from counted bytes and FLOPs against the device ceilings.

    Launch-bound: the ideal time (max of bytes/bandwidth and FLOPs/peak) is below a couple of
    launch costs, or the measured runtime is itself within a few launch costs.
    """
    c = ceilings or CEILINGS["cuda" if device.startswith("cuda") else "cpu"]
    nbytes, flops = counted_work(problem)
    if nbytes == 0 and flops == 0:
        return Bottleneck.UNKNOWN
    t_mem, t_flop = nbytes / c.bandwidth_bytes_s, flops / c.flops_s
    if max(t_mem, t_flop) < 2 * c.launch_s:
        return Bottleneck.LAUNCH
    if runtime_ms is not None and runtime_ms > 0 and runtime_ms * 1e-3 < 3 * c.launch_s:
        return Bottleneck.LAUNCH
    return Bottleneck.COMPUTE if t_flop > t_mem else Bottleneck.MEMORY
