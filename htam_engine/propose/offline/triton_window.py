"""Triton kernels for pooling regions (knobs pool.*): max / average pooling over 1-3 trailing dims.

One program per POOL_BLOCK pooled outputs of the flattened output. Each output walks its
window with the kernel extent unrolled (the window is a constant of the problem's module),
loading the region's input-shaped operands at each window position, applying the elementwise
ops before the pooling there, reducing, then applying the ops after the pooling (with operands
of the output's shape) before the only store. Average pooling divides by PyTorch's count:
the window clipped to the padded input (count_include_pad) or to the input, or the override.
"""

from __future__ import annotations

from htam_engine.propose.offline.ir import Region
from htam_engine.propose.offline.printers import TritonPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.schedule import elem_defs, row_defs
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings, pow2_between
from htam_engine.propose.offline.triton_gen import assign, ind

_INIT = {"red_max": '-float("inf")', "red_sum": "0.0"}


def window_space(region: Region) -> list[KnobSpec]:
    return [
        KnobSpec(Knob.POOL_BLOCK, pow2_between(128, 4096), 1024, "pooled outputs per program"),
        KnobSpec(Knob.POOL_WARPS, (1, 2, 4, 8), 4, "warps per program"),
        KnobSpec(Knob.INDEX, ("auto", "int64"), "auto", "offset width"),
    ]


def window_kernel(region: Region, s: Settings) -> tuple[list[str], list[str]]:
    w = region.window
    nd = w.nd
    pr = TritonPrinter(fast=s.get(Knob.MATH) == "fast")
    name = f"_k_region_{region.index}"
    red = region.reductions()[0]
    op = region.exprs[red].op
    wide = s.get(Knob.INDEX) == "int64"

    def load(k: int) -> str:
        return {"scalar": f"c{k}", "outfull": f"u{k}"}.get(region.inputs[k].kind, f"x{k}")

    ref = leaf_ref(region, pr, "cnt", load, lambda i: f"v{i}")
    sizes = [f"I{d}" for d in range(nd)] + [f"O{d}" for d in range(nd)]
    params = [f"p{k}" for k in range(len(region.inputs))] + ["po", "n"] + sizes + ["BLOCK: tl.constexpr",
                                                                                   "BIG: tl.constexpr"]
    head = [f"c{k} = tl.load(p{k})" for k, inp in enumerate(region.inputs) if inp.kind == "scalar"]
    if wide:
        head.append("offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    else:
        head += ["if BIG:", "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)", "else:",
                 "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)"]
    head += ["mask = offs < n", "t = offs"]
    for d in reversed(range(nd)):  # the pooled position: leading index nc, then o0..o{nd-1}
        head += [f"o{d} = t % O{d}", f"t = t // O{d}"]
    head += ["nc = t", f"acc = tl.full([BLOCK], {_INIT[op]}, tl.float32)"]
    # the window, unrolled: position i_d = o_d * stride - padding + k_d * dilation along each dim
    loop, depth = [], 0
    for d in range(nd):
        pad = " " * (4 * depth)
        loop += [pad + f"for k{d} in tl.static_range({w.kernel[d]}):",
                 pad + f"    i{d} = o{d} * {w.stride[d]} - {w.padding[d]} + k{d} * {w.dilation[d]}",
                 pad + f"    in{d} = (i{d} >= 0) & (i{d} < I{d})"]
        depth += 1
    inner = ["valid = mask & " + " & ".join(f"in{d}" for d in range(nd))]
    index = "nc"
    for d in range(nd):
        index = f"({index} * I{d} + i{d})"
    inner.append(f"xi = {index}")
    arg = region.exprs[red].args[0]
    ids = elem_defs(region, [arg])
    for i in ids:
        e = region.exprs[i]
        if e.op == "load" and region.inputs[int(e.value)].kind == "full":
            k = int(e.value)
            inner.append(f"x{k} = tl.load(p{k} + xi, mask=valid, other=0.0)")
    inner += emit_defs(region, ids, pr, ref, lambda i: f"v{i}", assign)
    if op == "red_max":
        inner.append(f"acc = tl.maximum(acc, tl.where(valid, {ref(arg)}, {_INIT[op]}))")
    else:
        inner.append(f"acc += tl.where(valid, {ref(arg)}, 0.0)")
    loop += ind(inner, 4 * depth)
    tail = [f"v{red} = acc"]
    if w.kind == "avg":
        tail += _divisor(w)
    for k, inp in enumerate(region.inputs):
        if inp.kind == "outfull":
            tail.append(f"u{k} = tl.load(p{k} + offs, mask=mask, other=0.0)")
    defined = {red}
    tail += emit_defs(region, row_defs(region, [region.out], defined), pr, ref, lambda i: f"v{i}", assign)
    tail.append(f"tl.store(po + offs, {ref(region.out)}, mask=mask)")
    src = ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(head + loop + tail)
    big = "True" if wide else "max(out.numel(), ts[0].numel()) >= 2**31 - BLOCK"
    launch = [
        f"BLOCK = {s[Knob.POOL_BLOCK]}",
        "n = out.numel()",
        f"{name}[(triton.cdiv(n, BLOCK),)](*ts, out, n, *shape[-{nd}:], *oshape[-{nd}:], BLOCK=BLOCK, BIG={big}, "
        f"num_warps={s[Knob.POOL_WARPS]})",
    ]
    return src, launch


def _divisor(w) -> list[str]:
    """`cnt`: PyTorch's average-pooling divisor for each output."""
    if w.divisor:
        return [f"cnt = {float(w.divisor)}"]
    lines, full, valid = [], [], []
    for d in range(w.nd):
        lines += [f"s{d} = o{d} * {w.stride[d]} - {w.padding[d]}",
                  f"e{d} = tl.minimum(s{d} + {w.kernel[d]}, I{d} + {w.padding[d]})",
                  f"w{d} = tl.minimum(e{d}, I{d}) - tl.maximum(s{d}, 0)"]
        full.append(f"(e{d} - s{d})")
        valid.append(f"w{d}")
    count = " * ".join(full if w.count_include_pad else valid)
    return lines + [f"cnt = ({count}).to(tl.float32)"]

