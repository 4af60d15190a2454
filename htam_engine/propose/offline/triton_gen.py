"""Triton kernels for fused regions (run on a GPU, or on the CPU under TRITON_INTERPRET=1).

Elementwise: one program per BLOCK of the flattened output (or persistent programs
walking blocks with a grid stride). Rows (inner == 1): one program per row, looping
over the row in BLOCK chunks once per schedule pass; reducing a middle dimension
(inner > 1): one program per (outer index, block of inner positions), vectorised
over the inner positions. When rows (or columns) are too few to fill the device and the
reduction allows it (schedule.split_reductions), each is cut into slices reduced by separate
programs into a scratch buffer, and a second kernel combines the slices and writes the output.
"""

from __future__ import annotations

from htam_engine.propose.offline.ir import ROW, Region, needed
from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.printers import TritonPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.schedule import Reduction, build_schedule, elem_defs, row_defs, split_reductions
from htam_engine.propose.offline.templates import Variant

NEG_INF = '-float("inf")'
_INIT = {"red_sum": "0.0", "red_mean": "0.0", "red_max": NEG_INF, "red_min": 'float("inf")'}


def _ind(lines: list[str], n: int = 4) -> list[str]:
    return [" " * n + ln if ln else ln for ln in lines]


def _assign(_ctype: str, name: str, value: str) -> str:
    return f"{name} = {value}"


# ---------------------------------------------------------------- elementwise


def ew_kernel(region: Region, variant: Variant) -> tuple[list[str], list[str]]:
    pr = TritonPrinter(fast=variant.fast)
    k_name = f"_k_region_{region.index}"
    bands = [k for k, i in enumerate(region.inputs) if i.kind in ("band0", "band1")]
    ptrs = [f"p{k}" for k in range(len(region.inputs))]
    params = ptrs + ["po", "n", "L"] + [f"{x}{k}" for k in bands for x in ("div", "mod")] + [
        "BLOCK: tl.constexpr", "BIG: tl.constexpr"]
    ids = needed(region.exprs, [region.out])

    def load(k: int) -> str:
        return f"c{k}" if region.inputs[k].kind == "scalar" else f"x{k}"

    ref = leaf_ref(region, pr, "0.0", load, lambda i: f"v{i}")
    body = []
    if bands:
        body += ["r = offs // L", "j = offs - r * L"]
    for i in ids:
        e = region.exprs[i]
        if e.op != "load":
            continue
        k = int(e.value)
        kind = region.inputs[k].kind
        if kind == "full":
            body.append(f"x{k} = tl.load(p{k} + offs, mask=mask, other=0.0)")
        elif kind == "band1":
            body.append(f"x{k} = tl.load(p{k} + ((r // div{k}) % mod{k}) * L + j, mask=mask, other=0.0)")
        elif kind == "band0":
            body.append(f"x{k} = tl.load(p{k} + (r // div{k}) % mod{k}, mask=mask, other=0.0)")
    body += emit_defs(region, ids, pr, ref, lambda i: f"v{i}", _assign)
    body.append(f"tl.store(po + offs, {ref(region.out)}, mask=mask)")
    head = [f"c{k} = tl.load(p{k})" for k, inp in enumerate(region.inputs) if inp.kind == "scalar"]
    if variant.ew == "stride":
        loop = ["pid = tl.program_id(0)", "nprog = tl.num_programs(0)", "nblocks = (n + BLOCK - 1) // BLOCK",
                "for blk in range(pid, nblocks, nprog):",
                "    offs = blk * BLOCK + tl.arange(0, BLOCK)",
                "    mask = offs < n"] + _ind(body)
    else:
        # 32-bit index arithmetic (cheaper division for broadcast operands) unless the tensor is huge
        loop = ["if BIG:", "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)", "else:",
                "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)"]
        if variant.ew == "vec4":
            # blocks start 4-aligned and run contiguously: 4-wide (128-bit) accesses, masked tail
            loop.append("offs = tl.max_contiguous(tl.multiple_of(offs, 4), 4)")
        loop += ["mask = offs < n"] + body
    src = ["@triton.jit", f"def {k_name}({', '.join(params)}):"] + _ind(head + loop)
    # 4096-element blocks keep enough loads in flight per SM to approach the copy bandwidth
    block, warps = {"scalar": (4096, 4), "vec4": (4096, 8), "stride": (4096, 4)}[variant.ew]
    if variant.ew == "stride":
        grid = "(max(1, min(triton.cdiv(n, BLOCK), _num_sms(out.device) * 4)),)"
    else:
        grid = "(triton.cdiv(n, BLOCK),)"
    launch = [
        "n = out.numel()",
        f"BLOCK = {block}",
        f"{k_name}[{grid}](*ts, out, n, L, *bands, BLOCK=BLOCK, BIG=n >= 2**31 - BLOCK, num_warps={warps})",
    ]
    return src, launch


# ---------------------------------------------------------------- rows


class _RegionKernel:
    """Shared by the row and column kernels: values are named v<id>, loaded operands x<k>/c<k>/u<k>."""

    def __init__(self, region: Region, variant: Variant, online: bool):
        self.r = region
        self.pr = TritonPrinter(fast=variant.fast)
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
        return emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", _assign)


class _RowKernel(_RegionKernel):
    """One program per row (inner == 1): each schedule pass is a loop over the row in BLOCK chunks."""

    def __init__(self, region: Region, variant: Variant):
        super().__init__(region, variant, online=variant.row == "online")

    def loads(self, ids: list[int]) -> list[str]:
        out = []
        for i in ids:
            e = self.r.exprs[i]
            if e.op != "load":
                continue
            k = int(e.value)
            kind = self.r.inputs[k].kind
            if kind == "full":
                out.append(f"x{k} = tl.load(p{k} + base + r, mask=mask, other=0.0)")
            elif kind == "rpos":
                out.append(f"x{k} = tl.load(p{k} + r, mask=mask, other=0.0)")
        return out

    def elem_lines(self, roots: list[int]) -> list[str]:
        ids = elem_defs(self.r, roots)
        return self.loads(ids) + emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", _assign)

    def pass_lines(self, reds: list[Reduction]) -> list[str]:
        exprs = self.r.exprs
        roots = [red.arg for red in reds]
        lines = self.row_lines(roots)
        ref = self.ref()
        init, step, fin = [], [], []
        for red in reds:
            a = red.ids[0]
            v = ref(red.arg)
            if red.kind == "plain":
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
            elif red.kind == "softmax":
                m, s = red.ids
                # per-lane running max and rescaled sum; the finite start avoids inf - inf
                init += [f"om{m} = tl.full([BLOCK], -3.0e38, tl.float32)", f"os{m} = tl.zeros([BLOCK], tl.float32)"]
                step += [f"xv{m} = tl.where(mask, {v}, {NEG_INF})",
                         f"mn{m} = tl.maximum(om{m}, xv{m})",
                         f"os{m} = os{m} * tl.exp(om{m} - mn{m}) + tl.exp(xv{m} - mn{m})",
                         f"om{m} = mn{m}"]
                fin += [f"v{m} = tl.max(om{m}, axis=0)", f"v{s} = tl.sum(os{m} * tl.exp(om{m} - v{m}), axis=0)"]
            else:
                mu, sq = red.ids
                # Welford per lane, then Chan's combination across lanes
                init += [f"wn{mu} = tl.zeros([BLOCK], tl.float32)", f"wm{mu} = tl.zeros([BLOCK], tl.float32)",
                         f"wq{mu} = tl.zeros([BLOCK], tl.float32)"]
                step += [f"wn{mu} += tl.where(mask, 1.0, 0.0)",
                         f"wd{mu} = tl.where(mask, {v} - wm{mu}, 0.0)",
                         f"wm{mu} += wd{mu} / tl.maximum(wn{mu}, 1.0)",
                         f"wq{mu} += wd{mu} * tl.where(mask, {v} - wm{mu}, 0.0)"]
                mean = f"tl.sum(wm{mu} * wn{mu}, axis=0) / cnt"
                fin += [f"mean{mu} = {mean}",
                        f"m2{mu} = tl.sum(wq{mu} + wn{mu} * (wm{mu} - mean{mu}) * (wm{mu} - mean{mu}), axis=0)",
                        f"v{mu} = mean{mu}" if exprs[mu].op == "red_mean" else f"v{mu} = mean{mu} * cnt",
                        f"v{sq} = m2{mu} / cnt" if exprs[sq].op == "red_mean" else f"v{sq} = m2{mu}"]
            self.defined.update(red.ids)
        loop = [f"for start in range({self.lo}, {self.hi}, BLOCK):", "    r = start + cols", f"    mask = r < {self.hi}"]
        loop += _ind(self.elem_lines(roots) + step)
        return lines + init + loop + fin

    def row_head(self) -> list[str]:
        head = []
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "scalar":
                head.append(f"c{k} = tl.load(p{k})")
            elif inp.kind == "outfull":
                head.append(f"u{k} = tl.load(p{k} + o)")
        return head

    def split_sources(self, name: str, reds: list[Reduction]) -> list[str]:
        """Two kernels for few long rows: <name>_part reduces slice `sp` of row `o` into
        part[o, sp, j]; <name>_fin combines a row's slices and computes the output."""
        ins = [f"p{k}" for k in range(len(self.r.inputs))]
        head = ["o = tl.program_id(0).to(tl.int64)", "sp = tl.program_id(1).to(tl.int64)", "base = o * R",
                "cols = tl.arange(0, BLOCK)", "lo = sp * CH", "hi = tl.minimum(lo + CH, R)"]
        self.lo, self.hi = "lo", "hi"
        body = self.pass_lines(reds)
        body += [f"tl.store(part + (o * SPLIT + sp) * {len(reds)} + {j}, v{red.ids[0]})" for j, red in enumerate(reds)]
        part = (["@triton.jit", f"def {name}_part({', '.join(ins + ['part', 'R', 'cnt', 'CH', 'SPLIT', 'BLOCK: tl.constexpr'])}):"]
                + _ind(head + self.row_head() + body))
        fin = ["o = tl.program_id(0).to(tl.int64)", "s = tl.arange(0, SB)", "smask = s < SPLIT"] + self.row_head()
        for j, red in enumerate(reds):
            a = red.ids[0]
            op = self.r.exprs[a].op
            vals = f"tl.load(part + (o * SPLIT + s) * {len(reds)} + {j}, mask=smask, other={_INIT[op]})"
            fn = {"red_max": "tl.max", "red_min": "tl.min"}.get(op, "tl.sum")
            fin.append(f"v{a} = {fn}({vals}, axis=0)")
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self.row_lines([self.r.out]) + [f"tl.store(po + o, {self.ref()(self.r.out)})"]
        return part + (["", "@triton.jit", f"def {name}_fin({', '.join(ins + ['po', 'part', 'SPLIT', 'cnt', 'SB: tl.constexpr'])}):"]
                + _ind(fin))

    def source(self, name: str) -> list[str]:
        params = [f"p{k}" for k in range(len(self.r.inputs))] + ["po", "R", "cnt", "BLOCK: tl.constexpr"]
        head = ["o = tl.program_id(0).to(tl.int64)", "base = o * R", "cols = tl.arange(0, BLOCK)"] + self.row_head()
        body = []
        for reds in self.sched.passes:
            body += self.pass_lines(reds)
        out = self.r.out
        body += self.row_lines([out])
        ref = self.ref()
        if self.r.levels[out] == ROW:
            body.append(f"tl.store(po + o, {ref(out)})")
        else:
            body += ["for start in range(0, R, BLOCK):", "    r = start + cols", "    mask = r < R"]
            body += _ind(self.elem_lines([out]) + [f"tl.store(po + base + r, {ref(out)}, mask=mask)"])
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + _ind(head + body)


class _ColumnKernel(_RegionKernel):
    """Reducing a middle dimension: each program owns BLOCK inner positions of one outer index."""

    def __init__(self, region: Region, variant: Variant):
        super().__init__(region, variant, online=False)

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
        return out + emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", _assign)

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
            if op in ("red_sum", "red_mean"):
                step.append(f"acc{a} += {v}")
                fin.append(f"v{a} = acc{a} / cnt" if op == "red_mean" else f"v{a} = acc{a}")
            else:
                step.append(f"acc{a} = tl.{'maximum' if op == 'red_max' else 'minimum'}(acc{a}, {v})")
                fin.append(f"v{a} = acc{a}")
            self.defined.add(a)
        return body + init + [f"for r in range({lo}, {hi}):"] + _ind(self.elem_lines(roots) + step) + fin

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
        part = ["@triton.jit", f"def {name}_part({', '.join(params)}):"] + _ind(self.col_head() + body)
        fin = self.col_head()
        for j, red in enumerate(reds):
            a = red.ids[0]
            op = self.r.exprs[a].op
            fin.append(f"v{a} = tl.full([BLOCK], {_INIT[op]}, tl.float32)")
        fin.append("for sp in range(0, SPLIT):")
        for j, red in enumerate(reds):
            a = red.ids[0]
            op = self.r.exprs[a].op
            x = f"tl.load(part + ((o * SPLIT + sp) * {n} + {j}) * inner + q, mask=qmask, other=0.0)"
            fn = {"red_max": "tl.maximum", "red_min": "tl.minimum"}.get(op)
            fin.append(f"    v{a} = {fn}(v{a}, {x})" if fn else f"    v{a} += {x}")
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self.row_lines([self.r.out]) + [f"tl.store(po + o * inner + q, {self.ref()(self.r.out)}, mask=qmask)"]
        params = ins + ["po", "part", "inner", "SPLIT", "cnt", "BLOCK: tl.constexpr"]
        return part + ["", "@triton.jit", f"def {name}_fin({', '.join(params)}):"] + _ind(fin)

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
            body += ["for r in range(0, R):"] + _ind(
                self.elem_lines([out]) + [f"tl.store(po + (o * R + r) * inner + q, {ref(out)}, mask=qmask)"])
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + _ind(head + body)


def row_kernel(region: Region, variant: Variant) -> tuple[list[str], list[str]]:
    k_row, k_col = f"_k_region_{region.index}", f"_k_region_{region.index}_cols"
    src = _RowKernel(region, variant).source(k_row) + [""] + _ColumnKernel(region, variant).source(k_col)
    split = split_reductions(region)
    if split:
        src += [""] + _RowKernel(region, variant).split_sources(k_row, split)
        src += [""] + _ColumnKernel(region, variant).split_sources(k_col, split)
    if variant.row == "warp":
        block, warps = "min(triton.next_power_of_2(R), 256)", 1
    elif variant.row == "vec4":
        block, warps = "min(triton.next_power_of_2(R), 4096)", 8
    else:
        block, warps = "min(triton.next_power_of_2(R), 1024)", 4
    rows = [f"{k_row}[(outer,)](*ts, out, R, float(R), BLOCK=BLOCK, num_warps={warps})"]
    cols = [f"{k_col}[(outer, triton.cdiv(inner, BLOCK))](*ts, out, R, inner, float(R), BLOCK=BLOCK, num_warps=4)"]
    if split:
        # Too few rows (columns) to fill the GPU: cut each into slices reduced by separate programs.
        n = len(split)
        rows = [
            "if outer < 2 * _num_sms(out.device) and R >= 16 * BLOCK:",
            "    SPLIT = min(triton.cdiv(4 * _num_sms(out.device), outer), triton.cdiv(R, 8 * BLOCK))",
            "    CH = triton.cdiv(triton.cdiv(R, SPLIT), BLOCK) * BLOCK",
            "    SPLIT = triton.cdiv(R, CH)",
            f"    part = torch.empty(outer * SPLIT * {n}, device=out.device, dtype=torch.float32)",
            f"    {k_row}_part[(outer, SPLIT)](*ts, part, R, float(R), CH, SPLIT, BLOCK=BLOCK, num_warps={warps})",
            f"    {k_row}_fin[(outer,)](*ts, out, part, SPLIT, float(R), SB=max(16, triton.next_power_of_2(SPLIT)),"
            " num_warps=4)",
            "else:",
        ] + _ind(rows)
        cols = [
            "if outer * triton.cdiv(inner, BLOCK) < 2 * _num_sms(out.device) and R >= 64:",
            "    SPLIT = min(triton.cdiv(8 * _num_sms(out.device), outer * triton.cdiv(inner, BLOCK)), triton.cdiv(R, 32))",
            "    CH = triton.cdiv(R, SPLIT)",
            "    SPLIT = triton.cdiv(R, CH)",
            f"    part = torch.empty(outer * SPLIT * {n} * inner, device=out.device, dtype=torch.float32)",
            f"    {k_col}_part[(outer, triton.cdiv(inner, BLOCK), SPLIT)](*ts, part, R, inner, float(R), CH, SPLIT,"
            " BLOCK=BLOCK, num_warps=4)",
            f"    {k_col}_fin[(outer, triton.cdiv(inner, BLOCK))](*ts, out, part, inner, SPLIT, float(R), BLOCK=BLOCK,"
            " num_warps=4)",
            "else:",
        ] + _ind(cols)
    launch = (["if inner == 1:", f"    BLOCK = max(16, {block})"] + _ind(rows)
              + ["else:", "    BLOCK = max(16, min(triton.next_power_of_2(inner), 256))"] + _ind(cols))
    return src, launch


_NUM_SMS = '''
_SMS = {}


def _num_sms(device):
    """Multiprocessor count (persistent grids launch a few programs per SM)."""
    if device.type != "cuda":
        return 4
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _SMS:
        _SMS[key] = torch.cuda.get_device_properties(key).multi_processor_count
    return _SMS[key]
'''


def kernels(plan: Plan, variant: Variant) -> tuple[str, dict[int, list[str]]]:
    parts = ["import triton", "import triton.language as tl", _NUM_SMS]
    launches: dict[int, list[str]] = {}
    for region in plan.regions:
        src, launch = row_kernel(region, variant) if region.is_row else ew_kernel(region, variant)
        parts.append("\n".join(src) + "\n")
        launches[region.index] = launch
    return "\n\n".join(parts), launches

