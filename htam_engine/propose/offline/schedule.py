"""Order a row region's reductions into passes over the row (shared by every backend).

A pass computes every reduction whose inputs only need row values from earlier
passes. The online variant merges two classic two-pass patterns into one pass:
max-then-sum-of-exp (online softmax) and mean-then-sum-of-squared-deviations
(Welford's algorithm).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from htam_engine.propose.offline.ir import CONST, ELEM, REDUCE, Region, needed


@dataclass(slots=True)
class Reduction:
    """One accumulator set in a pass."""

    kind: str  # plain | softmax | welford
    ids: tuple[int, ...]  # plain: (red,); softmax: (max_red, sum_red); welford: (mean_red, sq_red)
    arg: int  # the element expression accumulated


@dataclass(slots=True)
class RowSchedule:
    passes: list[list[Reduction]] = field(default_factory=list)

    @property
    def merged(self) -> bool:
        return any(r.kind != "plain" for p in self.passes for r in p)


def _depths(region: Region) -> dict[int, int]:
    exprs = region.exprs
    depth: dict[int, int] = {}
    memo: dict[int, int] = {}

    def reach(i: int) -> int:
        # deepest reduction at or below i
        if i in memo:
            return memo[i]
        e = exprs[i]
        d = max((reach(a) for a in e.args), default=0)
        if e.op in REDUCE:
            d += 1
            depth[i] = d
        memo[i] = d
        return d

    for i in range(len(exprs)):
        reach(i)
    return depth


def _mean_of(region: Region, mu: int) -> tuple[int, int] | None:
    """(reduction id, element arg) when `mu` is a mean of an element value."""
    e = region.exprs[mu]
    if e.op == "red_mean":
        return mu, e.args[0]
    if e.op == "div" and region.exprs[e.args[1]].op == "count" and region.exprs[e.args[0]].op == "red_sum":
        return e.args[0], region.exprs[e.args[0]].args[0]
    return None


def build_schedule(region: Region, online: bool) -> RowSchedule:
    exprs = region.exprs
    depth = _depths(region)
    merged_into: dict[int, Reduction] = {}
    if online:
        for i, d in depth.items():
            e = exprs[i]
            arg = exprs[e.args[0]]
            if e.op == "red_sum" and arg.op == "exp" and exprs[arg.args[0]].op == "sub":
                x, m = exprs[arg.args[0]].args
                if exprs[m].op == "red_max" and exprs[m].args[0] == x and m not in merged_into:
                    merged_into[m] = merged_into[i] = Reduction("softmax", (m, i), x)
            elif e.op in ("red_sum", "red_mean") and arg.op == "mul" and arg.args[0] == arg.args[1]:
                dev = exprs[arg.args[0]]
                if dev.op == "sub":
                    x, mu = dev.args
                    found = _mean_of(region, mu)
                    if found and found[1] == x and found[0] not in merged_into:
                        merged_into[found[0]] = merged_into[i] = Reduction("welford", (found[0], i), x)
    # stage of each reduction: merged partners take the earlier partner's depth
    stage: dict[int, int] = {}
    for i, d in depth.items():
        red = merged_into.get(i)
        stage[i] = depth[red.ids[0]] if red else d
    # a merge may let later reductions move earlier; recompute depths with merged edges
    order = sorted(depth, key=lambda i: (stage[i], i))
    passes: dict[int, list[Reduction]] = {}
    seen: set[int] = set()
    for i in order:
        red = merged_into.get(i)
        if red is None:
            red = Reduction("plain", (i,), exprs[i].args[0])
        if red.ids[0] in seen:
            continue
        seen.add(red.ids[0])
        passes.setdefault(stage[i], []).append(red)
    return RowSchedule([passes[k] for k in sorted(passes)])


def split_reductions(region: Region) -> list[Reduction] | None:
    """The reductions of a region whose rows can be cut into slices reduced in parallel, else None.

    That holds for one pass of plain reductions with a row value as the output: partial results
    over slices combine exactly (sums add; so do means, each being taken over the full count;
    maxima and minima take the max/min), and the output needs nothing but the combined values.
    Used when rows are too few to fill the GPU (a loss or a reduction over a leading dim).
    """
    sched = build_schedule(region, online=False)
    if len(sched.passes) != 1 or region.levels[region.out] == ELEM or region.index_output:
        return None
    reds = sched.passes[0]
    return reds if all(r.kind == "plain" for r in reds) else None


def split_pass(region: Region) -> list[Reduction] | None:
    """The reductions of a row region whose rows can be cut into slices, else None.

    That holds when the merged schedule (online softmax, Welford) has a single pass: each
    slice's partial state (a sum, a maximum, an online-softmax pair, a Welford triple)
    combines exactly with the others', and everything after the pass needs only the combined
    row values, whether the output is a row value or elementwise (a layer norm of few long rows).
    """
    if region.index_output:
        return None  # an index does not combine from slices here
    sched = build_schedule(region, online=True)
    return sched.passes[0] if len(sched.passes) == 1 else None


def split_column_passes(region: Region) -> list[list[Reduction]] | None:
    """The passes of a column reduction (a leading or middle dim reduced, inner positions kept)
    whose every pass can be cut into slices, else None: each pass's plain reductions combine
    exactly (sums and full-count means add, maxima and minima take the max/min), and a later
    pass needs only the combined values of the earlier ones. Not for an index (argmax)."""
    if region.index_output or region.middle:
        return None
    sched = build_schedule(region, online=False)
    plain = all(r.kind == "plain" and region.exprs[r.ids[0]].op in _COMBINABLE for p in sched.passes for r in p)
    return sched.passes if sched.passes and plain else None


_COMBINABLE = ("red_sum", "red_mean", "red_max", "red_min")


def row_defs(region: Region, roots: list[int], defined: set[int]) -> list[int]:
    """Row/constant-level expressions (not reductions, not leaves) needed by roots, not yet defined."""
    exprs, levels = region.exprs, region.levels
    stop = {i for i, e in enumerate(exprs) if e.op in REDUCE}
    ids = needed(exprs, roots, stop=stop - set(roots))
    out = []
    for i in ids:
        e = exprs[i]
        if levels[i] == ELEM or e.op in REDUCE or e.op in ("load", "const", "count", "pos") or i in defined:
            continue
        out.append(i)
    return out


def elem_defs(region: Region, roots: list[int]) -> list[int]:
    """Element-level expressions needed by roots (row values are taken as given)."""
    exprs, levels = region.exprs, region.levels
    stop = {i for i in range(len(exprs)) if levels[i] != ELEM}
    return [i for i in needed(exprs, roots, stop=stop) if levels[i] == ELEM]


def const_level(region: Region, i: int) -> bool:
    return region.levels[i] == CONST
