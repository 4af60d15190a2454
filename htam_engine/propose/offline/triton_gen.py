"""Triton kernels for elementwise and row regions (on a GPU, or the CPU under TRITON_INTERPRET=1).

Elementwise (knobs ew.*): one program per EW_BLOCK elements of the flattened output (`flat`),
persistent programs striding over blocks (`persistent`), or 2-D tiles over (rows, columns) of
the output so operands broadcast along a row or a column are loaded once per tile (`rows`).
Offsets are 32-bit while the tensor fits (index=auto) or always 64-bit (index=int64).

Rows (inner == 1, knobs row.*): one program per row looping over it in ROW_BLOCK chunks once
per schedule pass (`multi`), with merged online passes (`online`), or loading a row that fits
once and reusing it from registers for every pass (`cached`). Reducing a middle dimension
(inner > 1): one program per (outer index, COL_BLOCK inner positions).
Split (few rows or columns cannot fill the device; schedule.split_pass says when it is exact):
each row is cut into slices whose partial states (sums, maxima, online-softmax pairs, Welford
triples) a second kernel combines; a row-valued output is then written per row, an
elementwise one per slice.
"""

from __future__ import annotations

from htam_engine.propose.offline.ir import ROW, Region, needed
from htam_engine.propose.offline.printers import TritonPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.schedule import (
    Reduction,
    build_schedule,
    elem_defs,
    row_defs,
    split_column_passes,
    split_pass,
    split_reductions,
)
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings, nearest, pow2_between

NEG_INF = '-float("inf")'
_INIT = {"red_sum": "0.0", "red_mean": "0.0", "red_max": NEG_INF, "red_min": 'float("inf")', "red_argmax": NEG_INF,
         "red_argmin": 'float("inf")'}
# argmax / argmin: a lane takes a value strictly better than its own (so the first index wins ties)
_BETTER = {"red_argmax": ">", "red_argmin": "<"}
CACHE_LIMIT = 16384  # longest row the cached pass keeps in registers (longer rows take the looped pass)
CACHE_DEFAULT = 8192  # rows up to this long are cached by default
SLOTS = {"plain": 1, "softmax": 2, "welford": 3}  # partial-state floats per reduction in a split


def ind(lines: list[str], n: int = 4) -> list[str]:
    return [" " * n + ln if ln else ln for ln in lines]


def assign(_ctype: str, name: str, value: str) -> str:
    return f"{name} = {value}"


def _bands(region: Region) -> list[int]:
    return [k for k, i in enumerate(region.inputs) if i.kind in ("band0", "band1")]


# ---------------------------------------------------------------- design space


def ew_space(region: Region) -> list[KnobSpec]:
    n = 1
    for s in region.out_shape:
        n *= s
    block = 4096 if n >= 4096 * 512 else (2048 if n >= 2048 * 256 else 1024)
    grids = ("flat", "persistent", "rows") if _bands(region) else ("flat", "persistent")
    return [
        KnobSpec(Knob.EW_BLOCK, pow2_between(256, 16384), block, "elements per program"),
        KnobSpec(Knob.EW_WARPS, (1, 2, 4, 8, 16), 8 if block >= 4096 else 4, "warps per program"),
        KnobSpec(Knob.EW_VEC, (1, 4), 1, "contiguity hint for 4-wide accesses"),
        KnobSpec(Knob.EW_GRID, grids, "flat", "program layout"),
        KnobSpec(Knob.INDEX, ("auto", "int64"), "auto", "offset width"),
    ]


def _traced_inner(region: Region) -> int:
    """Positions after the reduced dims at the traced shapes (1: the reduced dims are the last)."""
    inner = 1
    for s in region.elem_shape[region.reduce_dims[-1] + 1:]:
        inner *= s
    return inner


def row_space(region: Region) -> list[KnobSpec]:
    d0, d1 = region.reduce_dims[0], region.reduce_dims[-1] + 1
    R = 1
    for s in region.elem_shape[d0:d1]:
        R *= s
    inner = _traced_inner(region)
    merged = build_schedule(region, online=True).merged
    passes = ("multi", "online", "cached") if merged else ("multi", "cached")
    if inner == 1 and R <= CACHE_DEFAULT:
        default_pass = "cached"
    else:
        default_pass = "online" if merged else "multi"
    block = nearest(pow2_between(64, 16384), min(max(R, 64), 4096))
    # a cached row of R values is spread over the warps: 16 of them keep it to at most 16 per thread
    warps = 16 if default_pass == "cached" and R > 4096 else (8 if block >= 2048 else (4 if block >= 256 else 2))
    specs = [
        KnobSpec(Knob.ROW_BLOCK, pow2_between(64, 16384), block, "row chunk per iteration (a cap)"),
        KnobSpec(Knob.ROW_WARPS, (1, 2, 4, 8, 16), warps, "warps per row program"),
        KnobSpec(Knob.ROW_PASS, passes, default_pass, "passes over the row"),
        KnobSpec(Knob.COL_BLOCK, pow2_between(16, 1024), nearest(pow2_between(16, 1024), min(max(inner, 16), 256)),
                 "inner positions per program"),
    ]
    # columns reduced in several passes (a batch norm over the batch) split too, where there are columns
    if split_pass(region) is not None or split_reductions(region) is not None or (
            inner > 1 and split_column_passes(region)):
        specs.append(KnobSpec(Knob.SPLIT, ("auto", "off", "wide"), "auto", "split few long rows or columns"))
    return specs


# ---------------------------------------------------------------- elementwise


def ew_loads(region: Region, ids: list[int], tiles: bool, skip: int | None = None) -> list[str]:
    """Loads of an elementwise region's operands at `offs` under `mask` (row r / column j of the
    broadcast period L for band operands); `skip` is an input the caller already holds."""
    out = []
    for i in ids:
        e = region.exprs[i]
        if e.op != "load" or int(e.value) == skip:
            continue
        k = int(e.value)
        kind = region.inputs[k].kind
        if kind == "full":
            out.append(f"x{k} = tl.load(p{k} + offs, mask=mask, other=0.0)")
        elif kind == "strided":  # row r = n * CH + c (CH a constant: the channel is contiguous in the tile)
            out.append(f"x{k} = tl.load(p{k} + (r // CH)[:, None] * sn{k} + (r % CH)[:, None] * sc{k} "
                       f"+ j[None, :] * sj{k}, mask=mask, other=0.0)")
        elif kind == "band1":
            row = f"((r // div{k}) % mod{k})"
            idx = f"{row}[:, None] * L + j[None, :]" if tiles else f"{row} * L + j"
            out.append(f"x{k} = tl.load(p{k} + {idx}, mask=mask, other=0.0)")
        elif kind == "band0":
            if tiles:  # one value per row of the tile
                out.append(f"x{k} = tl.load(p{k} + (r // div{k}) % mod{k}, mask=rmask, other=0.0)[:, None]")
            else:
                out.append(f"x{k} = tl.load(p{k} + (r // div{k}) % mod{k}, mask=mask, other=0.0)")
    return out


def ew_kernel(region: Region, s: Settings) -> tuple[list[str], list[str]]:
    pr = TritonPrinter(fast=s[Knob.MATH] == "fast")
    k_name = f"_k_region_{region.index}"
    bands = _bands(region)
    strided = [k for k, inp in enumerate(region.inputs) if inp.kind == "strided"]
    grid_kind = s[Knob.EW_GRID]
    # a strided operand is read in (channel, spatial) tiles: the channel runs down the tile's rows
    tiles = grid_kind == "rows" or bool(strided)
    wide = s[Knob.INDEX] == "int64"
    ptrs = [f"p{k}" for k in range(len(region.inputs))]
    sizes = ["nrows", "L"] if tiles else ["n", "L"]
    consts = ["BR: tl.constexpr", "BC: tl.constexpr"] if tiles else ["BLOCK: tl.constexpr"]
    if strided:
        consts.append("CH: tl.constexpr")
    params = (ptrs + ["po"] + sizes + [f"{x}{k}" for k in bands for x in ("div", "mod")]
              + [f"{x}{k}" for k in strided for x in ("sn", "sc", "sj")] + consts + ["BIG: tl.constexpr"])
    ids = needed(region.exprs, [region.out])

    def load(k: int) -> str:
        return f"c{k}" if region.inputs[k].kind == "scalar" else f"x{k}"

    ref = leaf_ref(region, pr, "0.0", load, lambda i: f"v{i}")
    body = []
    if bands and not tiles:
        body += ["r = offs // L", "j = offs - r * L"]
    body += ew_loads(region, ids, tiles)
    body += emit_defs(region, ids, pr, ref, lambda i: f"v{i}", assign)
    value = ref(region.out)
    if tiles:
        value = f"tl.broadcast_to({value}, [BR, BC])"
    body.append(f"tl.store(po + offs, {value}, mask=mask)")
    head = [f"c{k} = tl.load(p{k})" for k, inp in enumerate(region.inputs) if inp.kind == "scalar"]
    pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
    if tiles:
        # rows of the output (length L, the broadcast period) in BR x BC tiles
        if wide:
            loop = ["r = tl.program_id(0).to(tl.int64) * BR + tl.arange(0, BR)"]
        else:
            loop = ["if BIG:", "    r = tl.program_id(0).to(tl.int64) * BR + tl.arange(0, BR)", "else:",
                    "    r = tl.program_id(0) * BR + tl.arange(0, BR)"]
        loop += ["j = tl.program_id(1) * BC + tl.arange(0, BC)", "rmask = r < nrows",
                 "mask = rmask[:, None] & (j < L)[None, :]", "offs = r[:, None] * L + j[None, :]"] + body
    elif grid_kind == "persistent":
        # the block index runs 64-bit (from a 64-bit start) when offsets can pass 2^31
        if wide:
            start = ["first = tl.program_id(0).to(tl.int64)"]
        else:
            start = ["if BIG:", "    first = tl.program_id(0).to(tl.int64)", "else:", "    first = tl.program_id(0)"]
        loop = start + ["nprog = tl.num_programs(0)", "nblocks = tl.cdiv(n, BLOCK)",
                        "for blk in range(first, nblocks, nprog):", "    offs = blk * BLOCK + tl.arange(0, BLOCK)",
                        "    mask = offs < n"] + ind(body)
    else:
        if wide:
            loop = [f"offs = {pid} * BLOCK + tl.arange(0, BLOCK)"]
        else:  # 32-bit offsets (cheaper division for broadcast operands) unless the tensor is huge
            loop = ["if BIG:", "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)", "else:",
                    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)"]
        if s[Knob.EW_VEC] == 4:
            # blocks start 4-aligned and run contiguously: 4-wide (128-bit) accesses, masked tail
            loop.append("offs = tl.max_contiguous(tl.multiple_of(offs, 4), 4)")
        loop += ["mask = offs < n"] + body
    src = ["@triton.jit", f"def {k_name}({', '.join(params)}):"] + ind(head + loop)
    block, warps = s[Knob.EW_BLOCK], s[Knob.EW_WARPS]
    big = "True" if wide else "n >= 2**31 - BLOCK"
    launch = ["n = out.numel()", f"BLOCK = {block}"]
    if tiles and strided:
        # 32 channels a tile (128-byte reads of the channels-last operand), the block's rest spatial
        st = ", ".join(f"sn{k}, sc{k}, sj{k}" for k in strided)
        launch += [
            "nrows = n // L",
            "BR = min(32, triton.next_power_of_2(nrows))",
            "BC = max(16, min(triton.next_power_of_2(L), BLOCK // BR))",
            f"{k_name}[(triton.cdiv(nrows, BR), triton.cdiv(L, BC))](*ts, out, nrows, L, *bands, {st}, BR=BR, BC=BC, "
            f"CH=CH, BIG={big}, num_warps={warps})",
        ]
    elif tiles:
        launch += [
            "nrows = n // L",
            "BC = min(triton.next_power_of_2(L), BLOCK)",
            "BR = max(1, BLOCK // BC)",
            f"{k_name}[(triton.cdiv(nrows, BR), triton.cdiv(L, BC))](*ts, out, nrows, L, *bands, BR=BR, BC=BC, "
            f"BIG={big}, num_warps={warps})",
        ]
    else:
        if grid_kind == "persistent":
            grid = "(max(1, min(triton.cdiv(n, BLOCK), _num_sms(out.device) * 4)),)"
        else:
            grid = "(triton.cdiv(n, BLOCK),)"
        launch.append(f"{k_name}[{grid}](*ts, out, n, L, *bands, BLOCK=BLOCK, BIG={big}, num_warps={warps})")
    return src, launch


# ---------------------------------------------------------------- rows


class _RegionKernel:
    """Shared by the row and column kernels: values are named v<id>, loaded operands x<k>/c<k>/u<k>."""

    def __init__(self, region: Region, s: Settings, online: bool):
        self.r = region
        self.pr = TritonPrinter(fast=s[Knob.MATH] == "fast")
        self.sched = build_schedule(region, online=online)
        self.defined: set[int] = set()
        # the slice of the reduced rows this program walks (a split kernel walks part of them)
        self.lo, self.hi = "0", "R"

    def ref(self):
        def load(k: int) -> str:
            kind = self.r.inputs[k].kind
            return {"scalar": f"c{k}", "outfull": f"u{k}"}.get(kind, f"x{k}")

        return leaf_ref(self.r, self.pr, "cnt", load, lambda i: f"v{i}")

    def row_lines(self, roots: list[int]) -> list[str]:
        ids = row_defs(self.r, roots, self.defined)
        self.defined.update(ids)
        return emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", assign)


def _combine_partials(exprs, reds: list[Reduction], load) -> list[str]:
    """Row values from the partial states of a row's slices; load(slot) reads slot `slot` of every
    slice as a vector (masked lanes get `other`)."""
    lines, slot = [], 0
    for red in reds:
        a = red.ids[0]
        if red.kind == "plain":
            op = exprs[a].op
            fn = {"red_max": "tl.max", "red_min": "tl.min"}.get(op, "tl.sum")
            lines.append(f"v{a} = {fn}({load(slot, _INIT[op])}, axis=0)")
        elif red.kind == "softmax":
            m, s = red.ids
            lines += [f"pm{m} = {load(slot, '-3.0e38')}", f"ps{m} = {load(slot + 1, '0.0')}",
                      f"v{m} = tl.max(pm{m}, axis=0)", f"v{s} = tl.sum(ps{m} * tl.exp(pm{m} - v{m}), axis=0)"]
        else:
            mu, sq = red.ids
            # Chan et al.: the slices' (count, mean, M2) combine exactly
            lines += [f"pn{mu} = {load(slot, '0.0')}", f"pm{mu} = {load(slot + 1, '0.0')}",
                      f"pq{mu} = {load(slot + 2, '0.0')}",
                      f"mean{mu} = tl.sum(pn{mu} * pm{mu}, axis=0) / cnt",
                      f"m2{mu} = tl.sum(pq{mu} + pn{mu} * (pm{mu} - mean{mu}) * (pm{mu} - mean{mu}), axis=0)",
                      f"v{mu} = mean{mu}" if exprs[mu].op == "red_mean" else f"v{mu} = mean{mu} * cnt",
                      f"v{sq} = m2{mu} / cnt" if exprs[sq].op == "red_mean" else f"v{sq} = m2{mu}"]
        slot += SLOTS[red.kind]
    return lines


class _RowKernel(_RegionKernel):
    """One program per row (inner == 1)."""

    def __init__(self, region: Region, s: Settings, mode: str):
        super().__init__(region, s, online=mode in ("online", "split"))
        self.mode = mode  # multi | online | cached | split
        self.elem_defined: set[int] = set()  # cached mode: element values already in registers
        # element r of row o: contiguous rows, or the batch-statistics layout (ir.Region.middle)
        self.at = "((r // IN) * NK + o) * IN + r % IN" if region.middle else "base + r"
        self.sizes = ["R", "NK", "IN"] if region.middle else ["R"]
        self.mixed = [f"{x}{k}" for k, i in enumerate(region.inputs) if i.kind == "mixed" for x in ("mk", "mv", "ms")]

    def loads(self, ids: list[int]) -> list[str]:
        out = []
        for i in ids:
            e = self.r.exprs[i]
            if e.op != "load":
                continue
            k = int(e.value)
            kind = self.r.inputs[k].kind
            if kind == "full":
                out.append(f"x{k} = tl.load(p{k} + {self.at}, mask=mask, other=0.0)")
            elif kind == "rpos":
                out.append(f"x{k} = tl.load(p{k} + r, mask=mask, other=0.0)")
            elif kind == "mixed":  # along the last kept and first reduced dims (a group norm's affine)
                out.append(f"x{k} = tl.load(p{k} + (o % mk{k}) * mv{k} + r // ms{k}, mask=mask, other=0.0)")
        return out

    def elem_lines(self, roots: list[int]) -> list[str]:
        ids = elem_defs(self.r, roots)
        if self.mode == "cached":
            ids = [i for i in ids if i not in self.elem_defined]
            self.elem_defined.update(ids)
        return self.loads(ids) + emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", assign)

    def _cached_pass(self, reds: list[Reduction]) -> list[str]:
        exprs = self.r.exprs
        lines = self.row_lines([red.arg for red in reds]) + self.elem_lines([red.arg for red in reds])
        ref = self.ref()
        for red in reds:
            a = red.ids[0]
            op = exprs[a].op
            v = ref(red.arg)
            if op in ("red_sum", "red_mean"):
                total = f"tl.sum(tl.where(mask, {v}, 0.0), axis=0)"
                lines.append(f"v{a} = {total} / cnt" if op == "red_mean" else f"v{a} = {total}")
            elif op in _BETTER:  # the first index of the extreme value
                fn = "tl.argmax" if op == "red_argmax" else "tl.argmin"
                lines.append(f"v{a} = {fn}(tl.where(mask, {v}, {_INIT[op]}), axis=0).to(tl.int64)")
            else:
                fn = "tl.max" if op == "red_max" else "tl.min"
                lines.append(f"v{a} = {fn}(tl.where(mask, {v}, {_INIT[op]}), axis=0)")
            self.defined.add(a)
        return lines

    def pass_lines(self, reds: list[Reduction], partial: bool = False) -> list[str]:
        """One loop over [lo, hi) accumulating the pass's reductions; `partial` finishes with the
        slice's partial states (part_vals) instead of the row values."""
        if self.mode == "cached":
            return self._cached_pass(reds)
        exprs = self.r.exprs
        roots = [red.arg for red in reds]
        lines = self.row_lines(roots)
        ref = self.ref()
        init, step, fin = [], [], []
        self.part_vals: list[str] = []
        for red in reds:
            a = red.ids[0]
            v = ref(red.arg)
            if red.kind == "plain" and exprs[a].op in _BETTER:
                op = exprs[a].op
                init += [f"acc{a} = tl.full([BLOCK], {_INIT[op]}, tl.float32)",
                         f"idx{a} = tl.zeros([BLOCK], tl.int64)"]
                step += [f"cand{a} = tl.where(mask, {v}, {_INIT[op]})", f"take{a} = cand{a} {_BETTER[op]} acc{a}",
                         f"acc{a} = tl.where(take{a}, cand{a}, acc{a})", f"idx{a} = tl.where(take{a}, r, idx{a})"]
                best = "tl.max" if op == "red_argmax" else "tl.min"
                fin += [f"best{a} = {best}(acc{a}, axis=0)",
                        f"v{a} = tl.min(tl.where(acc{a} == best{a}, idx{a}, R), axis=0)"]
            elif red.kind == "plain":
                op = exprs[a].op
                init.append(f"acc{a} = tl.full([BLOCK], {_INIT[op]}, tl.float32)")
                if op in ("red_sum", "red_mean"):
                    step.append(f"acc{a} += tl.where(mask, {v}, 0.0)")
                    total = f"tl.sum(acc{a}, axis=0)"
                    fin.append(f"v{a} = {total} / cnt" if op == "red_mean" else f"v{a} = {total}")
                else:
                    fn = "maximum" if op == "red_max" else "minimum"
                    step.append(f"acc{a} = tl.{fn}(acc{a}, tl.where(mask, {v}, {_INIT[op]}))")
                    fin.append(f"v{a} = tl.{'max' if op == 'red_max' else 'min'}(acc{a}, axis=0)")
                self.part_vals.append(f"v{a}")
            elif red.kind == "softmax":
                m, s = red.ids
                # per-lane running max and rescaled sum; the finite start avoids inf - inf
                init += [f"om{m} = tl.full([BLOCK], -3.0e38, tl.float32)", f"os{m} = tl.zeros([BLOCK], tl.float32)"]
                step += [f"xv{m} = tl.where(mask, {v}, {NEG_INF})",
                         f"mn{m} = tl.maximum(om{m}, xv{m})",
                         f"os{m} = os{m} * tl.exp(om{m} - mn{m}) + tl.exp(xv{m} - mn{m})",
                         f"om{m} = mn{m}"]
                fin += [f"v{m} = tl.max(om{m}, axis=0)", f"v{s} = tl.sum(os{m} * tl.exp(om{m} - v{m}), axis=0)"]
                self.part_vals += [f"v{m}", f"v{s}"]
            else:
                mu, sq = red.ids
                # Welford per lane, then Chan's combination across lanes
                init += [f"wn{mu} = tl.zeros([BLOCK], tl.float32)", f"wm{mu} = tl.zeros([BLOCK], tl.float32)",
                         f"wq{mu} = tl.zeros([BLOCK], tl.float32)"]
                step += [f"wn{mu} += tl.where(mask, 1.0, 0.0)",
                         f"wd{mu} = tl.where(mask, {v} - wm{mu}, 0.0)",
                         f"wm{mu} += wd{mu} / tl.maximum(wn{mu}, 1.0)",
                         f"wq{mu} += wd{mu} * tl.where(mask, {v} - wm{mu}, 0.0)"]
                count = "tl.maximum(sn{mu}, 1.0)".format(mu=mu) if partial else "cnt"
                fin += ([f"sn{mu} = tl.sum(wn{mu}, axis=0)"] if partial else []) + [
                    f"mean{mu} = tl.sum(wm{mu} * wn{mu}, axis=0) / {count}",
                    f"m2{mu} = tl.sum(wq{mu} + wn{mu} * (wm{mu} - mean{mu}) * (wm{mu} - mean{mu}), axis=0)"]
                if not partial:
                    fin += [f"v{mu} = mean{mu}" if exprs[mu].op == "red_mean" else f"v{mu} = mean{mu} * cnt",
                            f"v{sq} = m2{mu} / cnt" if exprs[sq].op == "red_mean" else f"v{sq} = m2{mu}"]
                self.part_vals += [f"sn{mu}", f"mean{mu}", f"m2{mu}"]
            self.defined.update(red.ids)
        loop = [f"for start in range({self.lo}, {self.hi}, BLOCK):", "    r = start + cols", f"    mask = r < {self.hi}"]
        loop += ind(self.elem_lines(roots) + step)
        return lines + init + loop + fin

    def row_head(self) -> list[str]:
        head = []
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "scalar":
                head.append(f"c{k} = tl.load(p{k})")
            elif inp.kind == "outfull":
                head.append(f"u{k} = tl.load(p{k} + o)")
        return head

    def _output(self) -> list[str]:
        out = self.r.out
        lines = self.row_lines([out])
        ref = self.ref()
        if self.r.levels[out] == ROW:
            return lines + [f"tl.store(po + o, {ref(out)})"]
        store = [f"tl.store(po + {self.at}, {ref(out)}, mask=mask)"]
        if self.mode == "cached":
            return lines + self.elem_lines([out]) + store
        loop = [f"for start in range({self.lo}, {self.hi}, BLOCK):", "    r = start + cols", f"    mask = r < {self.hi}"]
        return lines + loop + ind(self.elem_lines([out]) + store)

    def source(self, name: str) -> list[str]:
        params = [f"p{k}" for k in range(len(self.r.inputs))] + ["po", *self.sizes, "cnt", *self.mixed,
                                                                 "BLOCK: tl.constexpr"]
        head = ["o = tl.program_id(0).to(tl.int64)", "base = o * R", "cols = tl.arange(0, BLOCK)"] + self.row_head()
        if self.mode == "cached":
            head += ["r = cols", "mask = r < R"]
        body = []
        for reds in self.sched.passes:
            body += self.pass_lines(reds)
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(head + body + self._output())

    def split_sources(self, name: str, reds: list[Reduction]) -> list[str]:
        """<name>_part reduces slice `sp` of row `o` into its partial state part[o, sp, :];
        <name>_fin combines a row's slices, then writes the row value (grid: rows) or its own
        slice of an elementwise output (grid: rows x slices)."""
        ins = [f"p{k}" for k in range(len(self.r.inputs))]
        nslots = sum(SLOTS[red.kind] for red in reds)
        head = ["o = tl.program_id(0).to(tl.int64)", "sp = tl.program_id(1).to(tl.int64)", "base = o * R",
                "cols = tl.arange(0, BLOCK)", "lo = sp * CH", "hi = tl.minimum(lo + CH, R)"]
        self.lo, self.hi = "lo", "hi"
        body = self.pass_lines(reds, partial=True)
        body += [f"tl.store(part + (o * SPLIT + sp) * {nslots} + {j}, {v})" for j, v in enumerate(self.part_vals)]
        part = (["@triton.jit", f"def {name}_part({', '.join(ins + ['part', *self.sizes, 'cnt', *self.mixed, 'CH', 'SPLIT', 'BLOCK: tl.constexpr'])}):"]
                + ind(head + self.row_head() + body))
        elem_out = self.r.levels[self.r.out] != ROW
        fin = ["o = tl.program_id(0).to(tl.int64)", "s = tl.arange(0, SB)", "smask = s < SPLIT"]
        if elem_out:
            fin += ["sp = tl.program_id(1).to(tl.int64)", "base = o * R", "cols = tl.arange(0, BLOCK)",
                    "lo = sp * CH", "hi = tl.minimum(lo + CH, R)"]
        fin += self.row_head()
        fin += _combine_partials(self.r.exprs, reds, lambda slot, other: (
            f"tl.load(part + (o * SPLIT + s) * {nslots} + {slot}, mask=smask, other={other})"))
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self._output()
        fparams = ins + ["po", "part", *self.sizes, "SPLIT", "cnt", *self.mixed, "CH", "SB: tl.constexpr",
                         "BLOCK: tl.constexpr"]
        return part + ["", "@triton.jit", f"def {name}_fin({', '.join(fparams)}):"] + ind(fin)


class _ColumnKernel(_RegionKernel):
    """Reducing a middle dimension: each program owns BLOCK inner positions of one outer index."""

    def __init__(self, region: Region, s: Settings):
        super().__init__(region, s, online=False)

    def elem_lines(self, roots: list[int]) -> list[str]:
        ids = elem_defs(self.r, roots)
        out = []
        for i in ids:
            e = self.r.exprs[i]
            if e.op == "load":
                k = int(e.value)
                kind = self.r.inputs[k].kind
                if kind == "full":
                    out.append(f"x{k} = tl.load(p{k} + (o * R + r) * inner + q, mask=qmask, other=0.0)")
                elif kind == "rpos":
                    out.append(f"x{k} = tl.load(p{k} + r)")
        return out + emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", assign)

    def col_head(self) -> list[str]:
        head = ["o = tl.program_id(0).to(tl.int64)",
                "q = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)", "qmask = q < inner"]
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "scalar":
                head.append(f"c{k} = tl.load(p{k})")
            elif inp.kind == "outfull":
                head.append(f"u{k} = tl.load(p{k} + o * inner + q, mask=qmask, other=0.0)")
        return head

    def pass_lines(self, reds: list[Reduction], lo: str = "0", hi: str = "R") -> list[str]:
        exprs = self.r.exprs
        ref = self.ref()
        roots = [red.arg for red in reds]
        body = self.row_lines(roots)
        init, step, fin = [], [], []
        for red in reds:
            a = red.ids[0]
            op = exprs[a].op
            v = ref(red.arg)
            init.append(f"acc{a} = tl.full([BLOCK], {_INIT[op]}, tl.float32)")
            if op in _BETTER:
                init.append(f"idx{a} = tl.zeros([BLOCK], tl.int64)")
                step += [f"take{a} = {v} {_BETTER[op]} acc{a}", f"acc{a} = tl.where(take{a}, {v}, acc{a})",
                         f"idx{a} = tl.where(take{a}, r, idx{a})"]
                fin.append(f"v{a} = idx{a}")
            elif op in ("red_sum", "red_mean"):
                step.append(f"acc{a} += {v}")
                fin.append(f"v{a} = acc{a} / cnt" if op == "red_mean" else f"v{a} = acc{a}")
            else:
                step.append(f"acc{a} = tl.{'maximum' if op == 'red_max' else 'minimum'}(acc{a}, {v})")
                fin.append(f"v{a} = acc{a}")
            self.defined.add(a)
        return body + init + [f"for r in range({lo}, {hi}):"] + ind(self.elem_lines(roots) + step) + fin

    def split_sources(self, name: str, reds: list[Reduction]) -> list[str]:
        """<name>_part reduces slice `sp` of the reduced dim into part[o, sp, j, q];
        <name>_fin combines the slices of each (o, q) and computes the output."""
        ins = [f"p{k}" for k in range(len(self.r.inputs))]
        n = len(reds)
        body = ["sp = tl.program_id(2).to(tl.int64)", "lo = sp * CH", "hi = tl.minimum(lo + CH, R)"]
        body += self.pass_lines(reds, "lo", "hi")
        body += [f"tl.store(part + ((o * SPLIT + sp) * {n} + {j}) * inner + q, v{red.ids[0]}, mask=qmask)"
                 for j, red in enumerate(reds)]
        params = ins + ["part", "R", "inner", "cnt", "CH", "SPLIT", "BLOCK: tl.constexpr"]
        part = ["@triton.jit", f"def {name}_part({', '.join(params)}):"] + ind(self.col_head() + body)
        fin = self.col_head() + self._combined([reds], ["part"])
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self.row_lines([self.r.out]) + [f"tl.store(po + o * inner + q, {self.ref()(self.r.out)}, mask=qmask)"]
        params = ins + ["po", "part", "inner", "SPLIT", "cnt", "BLOCK: tl.constexpr"]
        return part + ["", "@triton.jit", f"def {name}_fin({', '.join(params)}):"] + ind(fin)

    def split_pass_sources(self, name: str) -> list[str]:
        """Every pass over the reduced dim cut into SPLIT slices (columns too few to fill the device,
        more than one pass: a batch norm's mean, then its variance). <name>_sp<p> reduces slice sp of
        pass p into part<p>[o, sp, j, q], reading the values of the passes before it combined from
        their parts; <name>_spout combines them all and writes the output (an elementwise output
        slice by slice, so every program keeps working)."""
        ins = [f"p{k}" for k in range(len(self.r.inputs))]
        passes = self.sched.passes
        parts = [f"part{p}" for p in range(len(passes))]
        sliced = ["sp = tl.program_id(2).to(tl.int64)", "lo = sp * CH", "hi = tl.minimum(lo + CH, R)"]
        tail = ["R", "inner", "cnt", "CH", "SPLIT", "BLOCK: tl.constexpr"]
        src: list[str] = []
        for p, reds in enumerate(passes):
            self.defined = {i for earlier in passes[:p] for red in earlier for i in red.ids}
            body = self.col_head() + self._combined(passes[:p], parts) + sliced + self.pass_lines(reds, "lo", "hi")
            body += [f"tl.store(part{p} + ((o * SPLIT + sp) * {len(reds)} + {j}) * inner + q, v{red.ids[0]}, mask=qmask)"
                     for j, red in enumerate(reds)]
            src += ["@triton.jit", f"def {name}_sp{p}({', '.join(ins + parts[:p + 1] + tail)}):"] + ind(body) + [""]
        self.defined = {i for reds in passes for red in reds for i in red.ids}
        out = self.r.out
        body = self.col_head() + self._combined(passes, parts) + self.row_lines([out])
        if self.r.levels[out] == ROW:
            body.append(f"tl.store(po + o * inner + q, {self.ref()(out)}, mask=qmask)")
        else:
            body += sliced + ["for r in range(lo, hi):"] + ind(
                self.elem_lines([out]) + [f"tl.store(po + (o * R + r) * inner + q, {self.ref()(out)}, mask=qmask)"])
        return src + ["@triton.jit", f"def {name}_spout({', '.join(ins + ['po'] + parts + tail)}):"] + ind(body)

    def _combined(self, passes: list[list[Reduction]], buffers: list[str]) -> list[str]:
        """The values of these passes' reductions, each combined over the slices of its pass's buffer
        (slot j of slice s at ((o * SPLIT + s) * n + j) * inner + q)."""
        lines: list[str] = []
        for reds, buf in zip(passes, buffers):
            lines += [f"v{red.ids[0]} = tl.full([BLOCK], {_INIT[self.r.exprs[red.ids[0]].op]}, tl.float32)" for red in reds]
            lines.append("for sp in range(0, SPLIT):")
            for j, red in enumerate(reds):
                a = red.ids[0]
                x = f"tl.load({buf} + ((o * SPLIT + sp) * {len(reds)} + {j}) * inner + q, mask=qmask, other=0.0)"
                fn = {"red_max": "tl.maximum", "red_min": "tl.minimum"}.get(self.r.exprs[a].op)
                lines.append(f"    v{a} = {fn}(v{a}, {x})" if fn else f"    v{a} += {x}")
        return lines

    def source(self, name: str) -> list[str]:
        params = [f"p{k}" for k in range(len(self.r.inputs))] + ["po", "R", "inner", "cnt", "BLOCK: tl.constexpr"]
        head = self.col_head()
        body: list[str] = []
        ref = self.ref()
        for reds in self.sched.passes:
            body += self.pass_lines(reds)
        out = self.r.out
        body += self.row_lines([out])
        if self.r.levels[out] == ROW:
            body.append(f"tl.store(po + o * inner + q, {ref(out)}, mask=qmask)")
        else:
            body += ["for r in range(0, R):"] + ind(
                self.elem_lines([out]) + [f"tl.store(po + (o * R + r) * inner + q, {ref(out)}, mask=qmask)"])
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(head + body)


# When rows (columns) are too few to fill the device, by the split setting: (rows below which a
# row is cut, shortest row cut in row blocks, target programs per SM).
_ROW_SPLIT = {"auto": (2, 16, 4), "wide": (8, 4, 8)}
_COL_SPLIT = {"auto": (2, 64, 8), "wide": (8, 16, 16)}


def row_kernel(region: Region, s: Settings) -> tuple[list[str], list[str]]:
    k_row, k_col = f"_k_region_{region.index}", f"_k_region_{region.index}_cols"
    mode = s[Knob.ROW_PASS]
    looped = mode if mode != "cached" else ("online" if "online" in _passes(region) else "multi")
    src = _RowKernel(region, s, looped).source(k_row)
    if mode == "cached":
        src += [""] + _RowKernel(region, s, "cached").source(f"{k_row}_cached")
    src += [""] + _ColumnKernel(region, s).source(k_col)
    split_mode = s.get(Knob.SPLIT, "off")
    row_split = split_pass(region) if split_mode != "off" else None
    col_split = split_reductions(region) if split_mode != "off" else None
    if row_split:
        src += [""] + _RowKernel(region, s, "split").split_sources(k_row, row_split)
    # more than one pass over the columns (a batch norm's mean, then its variance): each pass split
    col_passes = split_column_passes(region) if split_mode != "off" and not col_split and _traced_inner(
        region) > 1 else None
    if col_split:
        src += [""] + _ColumnKernel(region, s).split_sources(k_col, col_split)
    elif col_passes:
        src += [""] + _ColumnKernel(region, s).split_pass_sources(k_col)
    warps = s[Knob.ROW_WARPS]
    sizes = "R, outer, IN" if region.middle else "R"  # the batch-statistics layout also needs NK, IN
    mixed = ", *mixed" if any(i.kind == "mixed" for i in region.inputs) else ""
    rows = [f"BLOCK = min(triton.next_power_of_2(R), {s[Knob.ROW_BLOCK]})",
            f"{k_row}[(outer,)](*ts, out, {sizes}, float(R){mixed}, BLOCK=BLOCK, num_warps={warps})"]
    if mode == "cached":
        rows = [f"if R <= {CACHE_LIMIT}:",
                f"    {k_row}_cached[(outer,)](*ts, out, {sizes}, float(R){mixed}, BLOCK=triton.next_power_of_2(R), "
                f"num_warps={warps})",
                "else:"] + ind(rows)
    cols = [f"{k_col}[(outer, triton.cdiv(inner, BLOCK))](*ts, out, R, inner, float(R), BLOCK=BLOCK, num_warps=4)"]
    if row_split:
        few, min_blocks, per_sm = _ROW_SPLIT[split_mode]
        nslots = sum(SLOTS[red.kind] for red in row_split)
        elem_out = region.levels[region.out] != ROW
        fin_grid = "(outer, SPLIT)" if elem_out else "(outer,)"
        block = f"min(triton.next_power_of_2(R), {s[Knob.ROW_BLOCK]})"
        rows = [
            f"if outer < {few} * _num_sms(out.device) and R >= {min_blocks} * {block}:",
            f"    BLOCK = {block}",
            f"    SPLIT = min(triton.cdiv({per_sm} * _num_sms(out.device), outer), triton.cdiv(R, 2 * BLOCK))",
            "    CH = triton.cdiv(triton.cdiv(R, SPLIT), BLOCK) * BLOCK",
            "    SPLIT = triton.cdiv(R, CH)",
            f"    part = torch.empty(outer * SPLIT * {nslots}, device=out.device, dtype=torch.float32)",
            f"    {k_row}_part[(outer, SPLIT)](*ts, part, {sizes}, float(R){mixed}, CH, SPLIT, BLOCK=BLOCK, "
            f"num_warps={warps})",
            f"    {k_row}_fin[{fin_grid}](*ts, out, part, {sizes}, SPLIT, float(R){mixed}, CH, "
            f"SB=max(16, triton.next_power_of_2(SPLIT)), BLOCK=BLOCK, num_warps={warps})",
            "else:",
        ] + ind(rows)
    if col_split:
        n = len(col_split)
        cols = _column_split_when(split_mode) + [
            f"    part = torch.empty(outer * SPLIT * {n} * inner, device=out.device, dtype=torch.float32)",
            f"    {k_col}_part[(outer, triton.cdiv(inner, BLOCK), SPLIT)](*ts, part, R, inner, float(R), CH, SPLIT,"
            " BLOCK=BLOCK, num_warps=4)",
            f"    {k_col}_fin[(outer, triton.cdiv(inner, BLOCK))](*ts, out, part, inner, SPLIT, float(R), BLOCK=BLOCK,"
            " num_warps=4)",
            "else:",
        ] + ind(cols)
    elif col_passes:
        parts = [f"part{p}" for p in range(len(col_passes))]
        grid = "(outer, triton.cdiv(inner, BLOCK), SPLIT)"
        out_grid = grid if region.levels[region.out] != ROW else "(outer, triton.cdiv(inner, BLOCK))"
        cols = _column_split_when(split_mode) + [f"    part{p} = torch.empty(outer * SPLIT * {len(reds)} * inner, device=out.device, dtype=torch.float32)"
             for p, reds in enumerate(col_passes)] + [
            f"    {k_col}_sp{p}[{grid}](*ts, {', '.join(parts[:p + 1])}, R, inner, float(R), CH, SPLIT, BLOCK=BLOCK, "
            "num_warps=4)" for p in range(len(col_passes))] + [
            f"    {k_col}_spout[{out_grid}](*ts, out, {', '.join(parts)}, R, inner, float(R), CH, SPLIT, BLOCK=BLOCK, "
            "num_warps=4)",
            "else:",
        ] + ind(cols)
    if region.middle:  # one layout: rows of kept positions (the column kernel is not used)
        return src, rows
    launch = (["if inner == 1:"] + ind(rows)
              + ["else:", f"    BLOCK = max(16, min(triton.next_power_of_2(inner), {s[Knob.COL_BLOCK]}))"] + ind(cols))
    return src, launch


def _column_split_when(split_mode: str) -> list[str]:
    """The launch's test for columns too few to fill the device, and the slices (SPLIT of CH rows)."""
    few, min_r, per_sm = _COL_SPLIT[split_mode]
    return [
        f"if outer * triton.cdiv(inner, BLOCK) < {few} * _num_sms(out.device) and R >= {min_r}:",
        f"    SPLIT = min(triton.cdiv({per_sm} * _num_sms(out.device), outer * triton.cdiv(inner, BLOCK)), "
        "triton.cdiv(R, 8))",
        "    CH = triton.cdiv(R, SPLIT)",
        "    SPLIT = triton.cdiv(R, CH)",
    ]


def _passes(region: Region) -> tuple[str, ...]:
    return ("multi", "online") if build_schedule(region, online=True).merged else ("multi",)


NUM_SMS = '''
_SMS = {}


def _num_sms(device):
    """Multiprocessor count (persistent grids and splits size themselves by it)."""
    if device.type != "cuda":
        return 4
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _SMS:
        _SMS[key] = torch.cuda.get_device_properties(key).multi_processor_count
    return _SMS[key]
'''

