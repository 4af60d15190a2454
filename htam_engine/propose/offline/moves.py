"""Moves in the design space: what an HTG direction and local strategy change in a candidate.

The coarse-to-fine step is coarse (the direction: which family of knobs moves) then fine (the
strategy: which concrete change). A local strategy names a move by id (its `template`
field); the move says which knobs it changes and how:

  SET    set the knobs to given values (vector width 4, online reduction, fast math, ...)
  SWEEP  walk each knob's domain outwards from its current value, nearest values first
         (block size, warps, GEMM tiles): the samples of a step are a small directed autotune
  RESET  go back to the plan's defaults, with some knobs pinned (the simplest correct kernel)

`options(move, space, base)` lists the settings the move reaches from `base`, best guess first;
a move whose knobs the plan's space does not have does not apply, and one whose options have
all been evaluated has nothing left to change (the proposer says so; the memory learns it).
Every move belongs to exactly one direction (`MOVES[id].direction`), so a strategy's record
says what a direction's move paid in a state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from htam_engine.propose.offline.space import Knob, Settings, Space, Value


class MoveKind(str, Enum):
    SET = "set"
    SWEEP = "sweep"
    RESET = "reset"


@dataclass(frozen=True, slots=True)
class Move:
    id: str
    direction: str
    kind: MoveKind
    knobs: tuple[Knob, ...]
    summary: str
    values: dict[Knob, Value] = field(default_factory=dict)  # SET: the target; RESET: the pinned knobs

    def applies(self, space: Space) -> bool:
        return self.kind is MoveKind.RESET or any(k in space for k in self.knobs)


def _set(id: str, direction: str, summary: str, targets: dict[Knob, Value]) -> Move:
    return Move(id, direction, MoveKind.SET, tuple(targets), summary, targets)


def _sweep(id: str, direction: str, summary: str, *knobs: Knob) -> Move:
    return Move(id, direction, MoveKind.SWEEP, knobs, summary)


MOVES: dict[str, Move] = {m.id: m for m in (
    # correctness repair: back to something simple that is known to be right
    Move("safe_kernel", "correctness_repair", MoveKind.RESET,
         (Knob.MATH, Knob.INDEX, Knob.ROW_PASS, Knob.SPLIT, Knob.EW_VEC, Knob.ROW_VEC, Knob.CPU_EXP,
          Knob.GEMM_PRECISION, Knob.GEMM_KERNEL, Knob.CONV_LAYOUT),
         "the plan's defaults with exact math, 64-bit offsets, one pass per reduction level, no split, "
         "scalar loads, the library's product where a kernel of ours computes the tail (else float32 FMA), "
         "a kept convolution in the problem's layout",
         # A tail that sums a product's columns cancels: on the H200 the split-float32 product put 1 of
         # 1,024 sums of 2/18 outside 1e-4, and the FMA GEMM that repaired it ran at 0.43x eager;
         # the library's product with the fused tail had run at about 1.05x (the earlier table's
         # 1.96x was against an eager time 1.87x too slow, timed while another job used the GPU).
         {Knob.MATH: "exact", Knob.INDEX: "int64", Knob.ROW_PASS: "multi", Knob.SPLIT: "off", Knob.EW_VEC: 1,
          Knob.ROW_VEC: 1, Knob.CPU_EXP: "libm", Knob.GEMM_PRECISION: "ieee", Knob.GEMM_KERNEL: "library",
          # a channels-last convolution can round differently from the problem's (design.conv_layout_spec)
          Knob.CONV_LAYOUT: "nchw"}),
    # operator fusion: the fused plan itself, and the tail fused into a GEMM of our own
    Move("fuse_chain", "operator_fusion", MoveKind.RESET, (), "the fused plan with its default settings"),
    _set("fuse_into_gemm", "operator_fusion", "the matrix product as a Triton GEMM with the tail in its epilogue",
         {Knob.GEMM_KERNEL: "triton"}),
    # algorithmic substitution: keep the library's GEMM, fuse what follows it
    _set("library_gemm", "algorithmic_substitution", "the matrix product left to cuBLAS/ATen, the tail fused after it",
         {Knob.GEMM_KERNEL: "library"}),
    _set("sum_first", "algorithmic_substitution",
         "a product summed over its columns sums them first: a column sum and a matrix-vector product",
         {Knob.GEMM_REWRITE: "sum_first"}),
    # parallel mapping
    _sweep("block_size", "parallel_mapping", "work per program: elements, row chunk, threads per block",
           Knob.EW_BLOCK, Knob.ROW_BLOCK, Knob.POOL_BLOCK, Knob.SCAN_BLOCK),
    _sweep("warps", "parallel_mapping", "warps per program", Knob.EW_WARPS, Knob.ROW_WARPS, Knob.GEMM_WARPS,
           Knob.POOL_WARPS, Knob.SCAN_WARPS),
    _sweep("items_per_thread", "parallel_mapping", "elements each GPU thread computes", Knob.EW_ITEMS),
    _set("warp_per_row", "parallel_mapping", "one warp per row with shuffle reductions", {Knob.ROW_MAP: "warp"}),
    _set("block_per_row", "parallel_mapping", "one block per row with a shared-memory tree", {Knob.ROW_MAP: "block"}),
    # reduction strategy
    _set("online_reduction", "reduction_strategy", "one merged pass: online softmax, Welford statistics",
         {Knob.ROW_PASS: "online"}),
    _set("two_pass", "reduction_strategy", "one pass over the row per reduction level", {Knob.ROW_PASS: "multi"}),
    _set("split_combine", "reduction_strategy", "few long rows cut into more slices, combined by a second kernel",
         {Knob.SPLIT: "wide"}),
    # data reuse
    _set("row_in_registers", "data_reuse", "a row that fits is loaded once and every pass reuses it from registers",
         {Knob.ROW_PASS: "cached"}),
    _sweep("gemm_tiles", "data_reuse", "GEMM tile shape (BM x BN x BK): reuse per loaded tile", Knob.GEMM_TILE),
    _sweep("gemm_group", "data_reuse", "group-M swizzle: programs sharing B tiles run together", Knob.GEMM_GROUP),
    # memory access
    _set("tile_rows", "memory_access", "2-D tiles over (rows, columns): broadcast operands loaded once per tile",
         {Knob.EW_GRID: "rows"}),
    _sweep("column_block", "memory_access", "inner positions read together when reducing a middle dimension",
           Knob.COL_BLOCK),
    _set("channels_last", "memory_access",
         "the kept convolution on a channels-last input, its elementwise tail reading the result by strides",
         {Knob.CONV_LAYOUT: "channels_last"}),
    _set("conv_nchw", "memory_access", "the kept convolution in the problem's NCHW layout (no input conversion)",
         {Knob.CONV_LAYOUT: "nchw"}),
    _set("gemm_contiguous", "memory_access", "GEMM operands copied row-major before the product",
         {Knob.GEMM_OPERANDS: "contiguous"}),
    _sweep("gemm_stages", "memory_access", "software pipelining depth of the GEMM's loads", Knob.GEMM_STAGES),
    # vectorization
    _set("vector_width", "vectorization", "4-wide (128-bit) loads and stores", {Knob.EW_VEC: 4, Knob.ROW_VEC: 4}),
    _set("cpu_vector_exp", "vectorization", "exp/erf/tanh as branch-free polynomials the compiler vectorises",
         {Knob.CPU_EXP: "poly"}),
    # launch overhead
    _sweep("split_k", "parallel_mapping", "K slices per GEMM output tile (few tiles, long K)", Knob.GEMM_SPLIT_K),
    _set("persistent_grid", "parallel_mapping", "a device-sized persistent grid striding over blocks",
         {Knob.EW_GRID: "persistent"}),
    _set("single_kernel", "launch_overhead", "no split: one kernel per region", {Knob.SPLIT: "off"}),
    # instruction throughput
    _set("fast_math", "instruction_throughput", "approximate exp, log and division within the tolerances",
         {Knob.MATH: "fast"}),
    # boundary handling
    _set("index_64", "boundary_handling", "64-bit offsets everywhere (no 32-bit fast path)", {Knob.INDEX: "int64"}),
    _set("index_32", "boundary_handling", "32-bit offsets while the tensor fits, 64-bit past 2^31 elements",
         {Knob.INDEX: "auto"}),
    # precision
    _set("exact_math", "precision_tensor_cores", "exact float32 arithmetic (no fast intrinsics)", {Knob.MATH: "exact"}),
    _set("gemm_tf32x3", "precision_tensor_cores",
         "the matrix product as our Triton GEMM on tensor cores, each float32 operand split into two TF32 parts",
         {Knob.GEMM_KERNEL: "triton", Knob.GEMM_PRECISION: "tf32x3", Knob.GEMM_OPERANDS: "k_major"}),
    _set("gemm_fma", "precision_tensor_cores",
         "the matrix product as our Triton GEMM in float32 FMA (no tensor cores) on row-major operands",
         {Knob.GEMM_KERNEL: "triton", Knob.GEMM_PRECISION: "ieee", Knob.GEMM_OPERANDS: "contiguous"}),
)}
MOVE_IDS: tuple[str, ...] = tuple(MOVES)
# Template ids of the fixed templates this design space replaced: strategies a bank learned with
# them still name a move.
LEGACY_TEMPLATES = {
    "ew_fused_scalar": "fuse_chain", "ew_fused_vec4": "vector_width", "ew_grid_stride": "persistent_grid",
    "ew_fast_math": "fast_math", "row_reduce_block": "two_pass", "row_reduce_warp": "warp_per_row",
    "row_reduce_online": "online_reduction", "row_reduce_vec4": "vector_width", "epilogue_fused": "library_gemm",
    "epilogue_vec4": "vector_width",
}


def move_of(template: str | None) -> Move | None:
    """The move a strategy's template names (current or legacy id), if any."""
    if template is None:
        return None
    return MOVES.get(LEGACY_TEMPLATES.get(template, template))


def _sweep_order(values: tuple[Value, ...], current: Value) -> list[Value]:
    """Domain values nearest to the current one first (up before down at equal distance)."""
    if current not in values:
        return list(values)
    i = values.index(current)
    out = []
    for d in range(1, len(values)):
        for j in (i + d, i - d):
            if 0 <= j < len(values):
                out.append(values[j])
    return out


def options(move: Move, space: Space, base: Settings) -> list[Settings]:
    """Settings the move reaches from `base`, best guess first (never `base` itself)."""
    if not move.applies(space):
        return []
    if move.kind is MoveKind.RESET:
        target = space.defaults().with_({k: v for k, v in move.values.items()
                                         if k in space and v in space.specs[k].values})
        return [target] if target != base else []
    if move.kind is MoveKind.SET:
        changes = {k: v for k, v in move.values.items() if k in space and v in space.specs[k].values}
        target = base.with_(changes)
        return [target] if target != base else []
    per_knob = [[base.with_({k: v}) for v in _sweep_order(space.specs[k].values, base[k])]
                for k in move.knobs if k in space]
    out: list[Settings] = []
    for rank in range(max((len(p) for p in per_knob), default=0)):  # round-robin over the knobs
        out += [p[rank] for p in per_knob if rank < len(p)]
    return out
