"""The offline proposer's design space: knobs, their domains for a plan and backend, settings.

A generator (one per region kind and backend) declares the knobs it reads, each with the
values it can take and a default chosen from the traced shapes; a plan's space is the union
over its regions. A candidate is the plan written with one `Settings` (a value per knob of the
space); the HTG's moves (moves.py) change settings. The settings travel in the candidate's
docstring as one `Settings:` line, so the best candidate of a session tells the next step
where in the space it stands (and a person reading the code sees it too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable

Value = int | str


class Knob(str, Enum):
    """Every knob of every generator (one name each; the value strings are in the domains)."""

    # elementwise regions
    EW_BLOCK = "ew.block"  # Triton: elements per program; CUDA: threads per block; C++: elements per task
    EW_WARPS = "ew.warps"  # Triton: warps per program
    EW_ITEMS = "ew.items"  # CUDA: elements per thread
    EW_VEC = "ew.vec"  # vector width of loads and stores: 1 or 4
    EW_GRID = "ew.grid"  # flat (one program per block) | persistent (a device-sized grid striding over blocks)
    # row regions (reductions, normalizations)
    ROW_BLOCK = "row.block"  # Triton: chunk of a row per iteration; CUDA: threads per row block; C++: rows per task
    ROW_WARPS = "row.warps"  # Triton: warps per row program
    ROW_MAP = "row.map"  # CUDA: block (a block per row) | warp (a warp per row)
    ROW_PASS = "row.pass"  # multi (one pass per reduction level) | online (merged passes) | cached (row in registers)
    ROW_VEC = "row.vec"  # vector width along the row: 1 or 4
    COL_BLOCK = "col.block"  # Triton: inner positions per program when reducing a middle dimension
    SPLIT = "split"  # few rows or columns: auto (split when they cannot fill the device) | off | wide (more slices)
    # a convolution kept in the library, read by the fused tail
    CONV_LAYOUT = "conv.layout"  # nchw (as the problem writes it) | channels_last (NHWC input; the tail reads it by strides)
    # everywhere
    INDEX = "index"  # auto (32-bit offsets while they fit) | int64 (always 64-bit)
    MATH = "math"  # exact | fast (approximate exp/log/division within the tolerances)
    CPU_EXP = "cpu.exp"  # C++: libm (scalar expf/erff/tanhf) | poly (branch-free polynomials that vectorise)
    # matrix products
    GEMM_KERNEL = "gemm.kernel"  # library (kept in PyTorch, tail fused after it) | triton (own GEMM, tail fused in)
    GEMM_TILE = "gemm.tile"  # BMxBNxBK
    GEMM_WARPS = "gemm.warps"
    GEMM_STAGES = "gemm.stages"
    GEMM_GROUP = "gemm.group"  # group-M swizzle of the program order (L2 reuse of B tiles)
    GEMM_SPLIT_K = "gemm.split_k"  # K slices per output tile (few tiles, long K), summed by a second kernel
    GEMM_PRECISION = "gemm.precision"  # ieee (float32 FMA) | tf32x3 (three TF32 tensor-core products, float32-level error)
    GEMM_OPERANDS = "gemm.operands"  # strided (views read in place) | contiguous (row-major copies) | k_major (K contiguous)
    GEMM_REWRITE = "gemm.rewrite"  # off | sum_first (a product summed over its columns: sum b first, then a GEMV)
    # pooling windows and scans
    POOL_BLOCK = "pool.block"  # output elements per program
    POOL_WARPS = "pool.warps"
    SCAN_BLOCK = "scan.block"  # chunk of a row scanned per iteration
    SCAN_WARPS = "scan.warps"


@dataclass(frozen=True, slots=True)
class KnobSpec:
    knob: Knob
    values: tuple[Value, ...]  # the domain, in order: sweeps walk it
    default: Value
    summary: str

    def __post_init__(self) -> None:
        if self.default not in self.values:
            raise ValueError(f"default {self.default!r} of {self.knob.value} is not among {self.values}")


class Space:
    """The knobs a plan's generators read on one backend, with their domains and defaults."""

    def __init__(self, specs: Iterable[KnobSpec] = ()):
        self.specs: dict[Knob, KnobSpec] = {}
        for s in specs:
            self.add(s)

    def add(self, spec: KnobSpec) -> None:
        """A knob several regions read keeps the first region's domain and default."""
        self.specs.setdefault(spec.knob, spec)

    def __contains__(self, knob: Knob) -> bool:
        return knob in self.specs

    def __iter__(self):
        return iter(self.specs.values())

    def defaults(self) -> "Settings":
        return Settings({k: s.default for k, s in self.specs.items()})

    def valid(self, settings: "Settings") -> bool:
        """Whether the settings set exactly this space's knobs to values of their domains."""
        return set(settings.values) == set(self.specs) and all(
            settings.values[k] in self.specs[k].values for k in self.specs)


class Settings:
    """A value for each knob of a space (immutable; equal settings write equal code)."""

    __slots__ = ("values",)

    def __init__(self, values: dict[Knob, Value]):
        self.values = dict(sorted(values.items(), key=lambda kv: kv[0].value))

    def __getitem__(self, knob: Knob) -> Value:
        return self.values[knob]

    def get(self, knob: Knob, default: Value | None = None) -> Value | None:
        return self.values.get(knob, default)

    def with_(self, changes: dict[Knob, Value]) -> "Settings":
        return Settings({**self.values, **{k: v for k, v in changes.items() if k in self.values}})

    def changed(self, other: "Settings") -> dict[Knob, Value]:
        """Knobs whose value here differs from `other` (this side's values)."""
        return {k: v for k, v in self.values.items() if other.values.get(k) != v}

    def key(self) -> str:
        return " ".join(f"{k.value}={v}" for k, v in self.values.items())

    def __str__(self) -> str:
        return self.key()

    def __repr__(self) -> str:
        return f"Settings({self.key()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self.values == other.values

    def __hash__(self) -> int:
        return hash(self.key())


SETTINGS_PREFIX = "Settings: "
MOVE_PREFIX = "Move: "
_KNOBS = {k.value: k for k in Knob}
_LINE = re.compile(r"^" + re.escape(SETTINGS_PREFIX) + r"(.*)$", re.M)
_MOVE = re.compile(r"^" + re.escape(MOVE_PREFIX) + r"(\S+)", re.M)


def parse_settings(code: str | None) -> Settings | None:
    """The settings a generated candidate was written with (None for code htam did not write)."""
    if not code:
        return None
    m = _LINE.search(code[:4000])
    if m is None:
        return None
    values: dict[Knob, Value] = {}
    for item in m.group(1).split():
        name, _, raw = item.partition("=")
        knob = _KNOBS.get(name)
        if knob is None or not raw:
            return None
        values[knob] = int(raw) if raw.lstrip("-").isdigit() else raw
    return Settings(values)


def parse_move(code: str | None) -> str | None:
    """The id of the move that produced a generated candidate, if any."""
    if not code:
        return None
    m = _MOVE.search(code[:4000])
    return m.group(1) if m else None


def pow2_between(lo: int, hi: int) -> tuple[int, ...]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return tuple(out)


def nearest(values: tuple[Value, ...], want: int) -> Value:
    """The domain value closest to `want` (domains of numbers)."""
    return min(values, key=lambda v: (abs(int(v) - want), int(v)))
