"""The fused-region expression IR the offline proposer generates kernels from.

A region is a small DAG of scalar expressions evaluated per element of one
"element shape" E. Reductions (sum/mean/max/min) reduce E over a fixed set of
contiguous dimensions and yield per-row values; later expressions may use those
row values (broadcast back over the row) or be row values themselves.

Nodes are hash-consed by the builder, so equal subexpressions share one id and
every backend computes them once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNARY = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "log1p", "expm1", "recip", "sigmoid")
BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
COMPARE = ("gt", "ge", "lt", "le", "eq")
REDUCE = ("red_sum", "red_mean", "red_max", "red_min", "red_argmax", "red_argmin")
ARG_REDUCE = ("red_argmax", "red_argmin")
TRIANGLE = ("triu", "tril")  # keep the elements on/above (below) diagonal `value`: GEMM epilogues only  # an index (int64): only ever a region's output

# Level of a value: constants < row values (one per reduced row) < element values.
CONST, ROW, ELEM = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Expr:
    op: str  # "load", "const", "count" (row length R as float), "pos" (position along the reduced row),
    #          UNARY, BINARY, COMPARE, "where", REDUCE
    args: tuple[int, ...] = ()
    value: float | int | None = None  # const value, or the input index of a load


@dataclass(frozen=True, slots=True)
class Window:
    """A pooling window over the last `nd` dims (PyTorch's max_pool / avg_pool semantics)."""

    kind: str  # "max" | "avg"
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False
    count_include_pad: bool = True  # avg: padded positions count in the divisor
    divisor: int | None = None  # avg: divisor_override

    @property
    def nd(self) -> int:
        return len(self.kernel)


@dataclass(frozen=True, slots=True)
class Scan:
    """A cumulative sum or product along one dim (inclusive or exclusive, forwards or reversed)."""

    op: str  # "sum" | "prod"
    dim: int
    reverse: bool = False
    exclusive: bool = False


@dataclass(slots=True)
class RegionInput:
    """A tensor the region reads: a graph value, parameter or buffer."""

    source: str  # Python expression in ModelNew.forward that yields it
    kind: str  # scalar | full | band0 | band1 (ew regions) | rpos | outfull (row regions)
    shape: tuple[int, ...]  # traced shape
    level: int = ELEM


@dataclass(slots=True)
class Region:
    """One fused kernel: inputs, expressions, one output."""

    index: int
    exprs: list[Expr]
    inputs: list[RegionInput]
    out: int  # id of the output expression
    elem_shape: tuple[int, ...]  # traced element shape E
    reduce_dims: tuple[int, ...] | None = None  # dims of E reduced (contiguous, ascending); None: elementwise
    out_keepdim: bool = True  # row output keeps reduced dims as size 1
    out_shape: tuple[int, ...] = ()
    levels: list[int] = field(default_factory=list)

    line: int = -1  # index of its call in Plan.lines
    window: Window | None = None  # a pooling region: values reduced over windows of elem_shape
    scan: Scan | None = None  # a scan region: the `scan` expression runs along reduce_dims[0]

    @property
    def is_row(self) -> bool:
        return self.reduce_dims is not None

    @property
    def middle(self) -> bool:
        """Reduced dims are a prefix and a suffix around kept middle dims (batch statistics): element r
        of kept position o sits at ((r // IN) * NK + o) * IN + r % IN (NK kept, IN the suffix's size)."""
        d = self.reduce_dims
        return d is not None and d != tuple(range(d[0], d[-1] + 1))

    @property
    def index_output(self) -> bool:
        """The region computes argmax / argmin: an int64 index, not a float."""
        return self.exprs[self.out].op in ARG_REDUCE

    @property
    def kind(self) -> str:
        """"ew" (elementwise), "row" (reductions over dims) or "window" (pooling)."""
        if self.window is not None:
            return "window"
        if self.scan is not None:
            return "scan"
        return "row" if self.reduce_dims is not None else "ew"

    @property
    def out_level(self) -> int:
        return self.levels[self.out]

    def reductions(self) -> list[int]:
        return [i for i, e in enumerate(self.exprs) if e.op in REDUCE]


class Builder:
    """Builds a hash-consed expression list with constant folding of trivial cases."""

    def __init__(self) -> None:
        self.exprs: list[Expr] = []
        self._ids: dict[Expr, int] = {}

    def _add(self, e: Expr) -> int:
        found = self._ids.get(e)
        if found is not None:
            return found
        self.exprs.append(e)
        self._ids[e] = len(self.exprs) - 1
        return self._ids[e]

    def load(self, index: int) -> int:
        return self._add(Expr("load", (), index))

    def const(self, value: float) -> int:
        return self._add(Expr("const", (), float(value)))

    def count(self) -> int:
        return self._add(Expr("count"))

    def pos(self) -> int:
        return self._add(Expr("pos"))

    def scan(self, a: int) -> int:
        return self._add(Expr("scan", (a,)))

    def tri(self, kind: str, a: int, diagonal: int) -> int:
        """triu / tril of a matrix product's output (a GEMM epilogue reads its tile's coordinates)."""
        return self._add(Expr(kind, (a,), int(diagonal)))

    def un(self, op: str, a: int) -> int:
        assert op in UNARY, op
        return self._add(Expr(op, (a,)))

    def bin(self, op: str, a: int, b: int) -> int:
        assert op in BINARY or op in COMPARE, op
        return self._add(Expr(op, (a, b)))

    def where(self, c: int, a: int, b: int) -> int:
        return self._add(Expr("where", (c, a, b)))

    def red(self, kind: str, a: int) -> int:
        op = "red_" + kind
        assert op in REDUCE, op
        return self._add(Expr(op, (a,)))

    def const_value(self, i: int) -> float | None:
        e = self.exprs[i]
        return float(e.value) if e.op == "const" else None

    # Convenience arithmetic that folds identities, keeping emitted code small.
    def add(self, a: int, b: int) -> int:
        if self.const_value(b) == 0.0:
            return a
        return self.bin("add", a, b)

    def mul(self, a: int, b: int) -> int:
        if self.const_value(b) == 1.0:
            return a
        if self.const_value(a) == 1.0:
            return b
        return self.bin("mul", a, b)


def compute_levels(exprs: list[Expr], input_levels: list[int]) -> list[int]:
    levels: list[int] = []
    for e in exprs:
        if e.op == "load":
            levels.append(input_levels[int(e.value)])
        elif e.op in ("const", "count"):
            levels.append(CONST)
        elif e.op == "pos":
            levels.append(ELEM)
        elif e.op in REDUCE:
            levels.append(ROW)
        else:
            levels.append(max(levels[a] for a in e.args))
    return levels


def needed(exprs: list[Expr], roots: list[int], stop: set[int] | None = None) -> list[int]:
    """Ids reachable from roots (not descending into `stop` ids), in topological order."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        if stop and i in stop:
            continue
        stack.extend(exprs[i].args)
    return sorted(seen)


@dataclass(slots=True)
class Gemm:
    """A matrix product a generator may compute itself (a Triton GEMM) or leave to the library.

    linear: out = a @ w.T (+ bias), w of shape (N, K), a of shape (..., K) flattened to M rows;
    matmul: out = a @ b with b of shape (K, N) (a's leading dims flattened to M rows), or both
    of shape (*batch, M, K) and (*batch, K, N) with equal batch dims.
    """

    index: int
    kind: str  # "linear" | "matmul"
    a: str  # Python sources of the operands in ModelNew.forward
    b: str
    bias: str | None
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    out_var: str
    line: int  # index of its call in Plan.lines
    epilogue: int | None = None  # the elementwise region a GEMM of ours computes in its epilogue

    @property
    def mnk(self) -> tuple[int, int, int, int]:
        """(batch, M, N, K) at the traced shapes."""
        k = self.a_shape[-1]
        n = self.b_shape[0] if self.kind == "linear" else self.b_shape[-1]
        if self.kind == "matmul" and len(self.b_shape) > 2:
            batch = 1
            for d in self.a_shape[:-2]:
                batch *= d
            return batch, self.a_shape[-2], n, k
        m = 1
        for d in self.a_shape[:-1]:
            m *= d
        return 1, m, n, k
