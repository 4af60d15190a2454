"""Triton kernels for scan regions (knobs scan.*): cumulative sums and products along a dim.

Scanning the last dim (inner == 1): one program per row walks it in SCAN_BLOCK chunks (from the
end for a reversed scan), scans each chunk with tl.cumsum / tl.cumprod and carries the running
total to the next; ops before the scan apply to each loaded chunk, ops after it to the scanned
chunk before its store. An exclusive sum is the inclusive one minus the element. Scanning a
middle dim (inner > 1): one program per (outer index, block of inner positions) steps through
the scanned dim, carrying one total per inner position.
"""

from __future__ import annotations

from htam_engine.propose.offline.ir import Region
from htam_engine.propose.offline.printers import TritonPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.schedule import elem_defs
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings, nearest, pow2_between
from htam_engine.propose.offline.triton_gen import assign, ind

_IDENTITY = {"sum": "0.0", "prod": "1.0"}


def scan_space(region: Region) -> list[KnobSpec]:
    d = region.reduce_dims[0]
    blocks = pow2_between(256, 8192)
    return [
        KnobSpec(Knob.SCAN_BLOCK, blocks, nearest(blocks, min(max(region.elem_shape[d], 256), 2048)),
                 "chunk of a row scanned per iteration"),
        KnobSpec(Knob.SCAN_WARPS, (1, 2, 4, 8, 16), 4, "warps per row program"),
        KnobSpec(Knob.COL_BLOCK, pow2_between(16, 1024), 64, "inner positions per program (a middle dim)"),
    ]


class _ScanWriter:
    def __init__(self, region: Region, s: Settings):
        self.r = region
        self.spec = region.scan
        self.pr = TritonPrinter(fast=s.get(Knob.MATH) == "fast")
        self.scan_id = next(i for i, e in enumerate(region.exprs) if e.op == "scan")

    def ref(self):
        def load(k: int) -> str:
            return {"scalar": f"c{k}", "outfull": f"u{k}"}.get(self.r.inputs[k].kind, f"x{k}")

        return leaf_ref(self.r, self.pr, "cnt", load, lambda i: f"v{i}")

    def values(self, roots: list[int], at: str, mask: str, skip: set[int]) -> list[str]:
        """Loads and element expressions for roots (those in `skip` are already defined)."""
        ids = [i for i in elem_defs(self.r, roots) if i not in skip]
        out = []
        for i in ids:
            e = self.r.exprs[i]
            if e.op != "load":
                continue
            k = int(e.value)
            kind = self.r.inputs[k].kind
            if kind == "full":
                out.append(f"x{k} = tl.load(p{k} + {at}, mask={mask}, other=0.0)")
            elif kind == "rpos":
                out.append(f"x{k} = tl.load(p{k} + r, mask={mask}, other=0.0)")
        rest = [i for i in ids if self.r.exprs[i].op != "load"]
        return out + emit_defs(self.r, rest, self.pr, self.ref(), lambda i: f"v{i}", assign)

    def head(self, column: bool) -> list[str]:
        lines = []
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "scalar":
                lines.append(f"c{k} = tl.load(p{k})")
            elif inp.kind == "outfull":
                at = "o * inner + q" if column else "o"
                lines.append(f"u{k} = tl.load(p{k} + {at}" + (", mask=qmask, other=0.0)" if column else ")"))
        return lines

    def rows(self, name: str) -> list[str]:
        op, arg = self.spec.op, self.r.exprs[self.scan_id].args[0]
        rev = "True" if self.spec.reverse else "False"
        fn = "tl.cumsum" if op == "sum" else "tl.cumprod"
        total = f"tl.sum(a, axis=0)" if op == "sum" else "tl.reduce(a, 0, _mul)"
        body = ["o = tl.program_id(0).to(tl.int64)", "base = o * R", "cols = tl.arange(0, BLOCK)"] + self.head(False)
        # the running total, a float32 scalar from the start (a loop-carried value keeps its type)
        body += [f"carry = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0) + {_IDENTITY[op]}",
                 "nchunks = tl.cdiv(R, BLOCK)", "for it in range(0, nchunks):"]
        chunk = [("start = (nchunks - 1 - it) * BLOCK" if self.spec.reverse else "start = it * BLOCK"),
                 "r = start + cols", "mask = r < R"]
        pre = self.values([arg], "base + r", "mask", set())
        chunk += pre + [f"a = tl.where(mask, {self.ref()(arg)}, {_IDENTITY[op]})",
                        f"scanned = {fn}(a, axis=0, reverse={rev})"]
        if op == "sum":
            chunk += ["scanned = scanned + carry", f"carry = carry + {total}"]
        else:
            chunk += ["scanned = scanned * carry", f"carry = carry * {total}"]
        if self.spec.exclusive:
            chunk.append("scanned = scanned - a")
        chunk.append(f"v{self.scan_id} = scanned")
        done = set(elem_defs(self.r, [arg])) | {self.scan_id}
        chunk += self.values([self.r.out], "base + r", "mask", done)
        chunk.append(f"tl.store(po + base + r, {self.ref()(self.r.out)}, mask=mask)")
        body += ind(chunk)
        params = [f"p{k}" for k in range(len(self.r.inputs))] + ["po", "R", "cnt", "BLOCK: tl.constexpr"]
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(body)

    def columns(self, name: str) -> list[str]:
        op, arg = self.spec.op, self.r.exprs[self.scan_id].args[0]
        body = ["o = tl.program_id(0).to(tl.int64)",
                "q = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)", "qmask = q < inner"]
        body += self.head(True) + [f"carry = tl.full([BLOCK], {_IDENTITY[op]}, tl.float32)", "for it in range(0, R):"]
        step = ["r = R - 1 - it" if self.spec.reverse else "r = it", "at = (o * R + r) * inner + q"]
        step += self.values([arg], "at", "qmask", set())
        a = self.ref()(arg)
        step.append(f"carry = carry + {a}" if op == "sum" else f"carry = carry * {a}")
        step.append(f"v{self.scan_id} = carry - {a}" if self.spec.exclusive else f"v{self.scan_id} = carry")
        done = set(elem_defs(self.r, [arg])) | {self.scan_id}
        step += self.values([self.r.out], "at", "qmask", done)
        step.append(f"tl.store(po + at, {self.ref()(self.r.out)}, mask=qmask)")
        body += ind(step)
        params = [f"p{k}" for k in range(len(self.r.inputs))] + ["po", "R", "inner", "cnt", "BLOCK: tl.constexpr"]
        return ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(body)


MUL = '''
@triton.jit
def _mul(a, b):
    return a * b
'''


def scan_kernel(region: Region, s: Settings) -> tuple[list[str], list[str]]:
    if region.scan.op == "prod" and region.scan.exclusive:
        raise ValueError("an exclusive product is not generated")
    w = _ScanWriter(region, s)
    name = f"_k_region_{region.index}"
    src = w.rows(name) + [""] + w.columns(f"{name}_cols")
    launch = [
        "if inner == 1:",
        f"    {name}[(outer,)](*ts, out, R, float(R), BLOCK={s[Knob.SCAN_BLOCK]}, num_warps={s[Knob.SCAN_WARPS]})",
        "else:",
        f"    BLOCK = max(16, min(triton.next_power_of_2(inner), {s[Knob.COL_BLOCK]}))",
        f"    {name}_cols[(outer, triton.cdiv(inner, BLOCK))](*ts, out, R, inner, float(R), BLOCK=BLOCK, num_warps=4)",
    ]
    return src, launch
