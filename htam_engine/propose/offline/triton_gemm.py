"""Triton GEMM kernels at float32 accuracy, with the tail fused into the epilogue (knobs gemm.*).

One program per BM x BN output tile (in group-M order: GEMM_GROUP row blocks of programs run
together and share B tiles in L2), stepping through K in BK slices with masked loads (any
shape, strided operands: transposed views need no copy). gemm.precision picks the dot:
`ieee` is float32 FMA (no TF32 rounding ever happens); `tf32x3` splits each float32 operand
into a TF32 value and a TF32 remainder and sums three tensor-core products (hi*hi + hi*lo +
lo*hi: only lo*lo, about 2^-22 of a product, is dropped), float32-level error at tensor-core
speed. Plain TF32 (one product, 10 mantissa bits) is not offered: it misses float32
tolerances. The epilogue adds the bias and computes the fused region's
expressions on the accumulator tile before the only store. Few output tiles and a long K
(GEMM_SPLIT_K > 1): each tile's K range is cut into slices whose partial tiles a second kernel
sums before the epilogue. Offsets are 64-bit when a tensor may pass 2^31 elements.

gemm.kernel=library leaves the product to PyTorch (cuBLAS / ATen) and the region runs after it.
"""

from __future__ import annotations

from htam_engine.propose.offline.ir import TRIANGLE, Gemm, Region, needed
from htam_engine.propose.offline.printers import TritonPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings
from htam_engine.propose.offline.triton_gen import assign, ew_loads, ind

# Tile shapes (BM x BN x BK), ordered so neighbours are similar (the tile sweep walks them).
TILES = ("32x32x32", "32x64x32", "64x32x32", "64x64x32", "64x64x64", "64x128x32", "128x64x32", "128x128x16",
         "128x128x32", "128x256x16", "256x128x16")


# tl.dot input precisions at float32 accuracy (the module docstring says why not plain "tf32").
PRECISIONS = ("ieee", "tf32x3")
# strided: views read in place; contiguous: row-major copies (the FMA GEMM reads a transposed B at
# half its row-major speed on the H200, 1/17 against 1/1); k_major: A row-major and B with K
# contiguous (B^T row-major), the layout the tensor-core products load fast (1/17 against 1/1
# under tf32x3). A copy is made only where the operand is not already laid out so.
OPERAND_LAYOUTS = ("strided", "contiguous", "k_major")


def _tile(text: str) -> tuple[int, int, int]:
    bm, bn, bk = (int(v) for v in text.split("x"))
    return bm, bn, bk


def _default_tile(m: int, n: int) -> str:
    fits = [t for t in TILES if _tile(t)[0] <= max(32, m) and _tile(t)[1] <= max(32, n)]
    return "128x128x32" if "128x128x32" in fits else max(fits, key=lambda t: (_tile(t)[0] * _tile(t)[1], t))


def gemm_space(g: Gemm, library_ok: bool) -> list[KnobSpec]:
    batch, m, n, k = g.mnk
    tile = _default_tile(m, n)
    bm, bn, _ = _tile(tile)
    tiles = batch * -(-m // bm) * -(-n // bn)
    split = 1
    while tiles * split < 132 and k // (split * 2) >= 4096 and split < 32:
        split *= 2  # few output tiles and a long K: fill the device with K slices
    # Rows of K-major operands start 16-byte aligned when K is a multiple of 4: there the split-float32
    # tensor-core GEMM is the default (H200, gpu_probe_variants.py --preset gemm: 1.3-1.5x cuBLAS's
    # float32 GEMM with K-major operands, 0.65x with a row-major B; 0.4x at K = 2949, where the FMA
    # GEMM keeps 0.7x), and it beats the library's product with a tail after it.
    tensor_cores = k % 4 == 0
    kernels = ("library", "triton") if library_ok else ("triton",)
    return [
        KnobSpec(Knob.GEMM_KERNEL, kernels, "library" if library_ok and not tensor_cores else "triton",
                 "the product in cuBLAS/ATen or in our Triton GEMM with the tail fused"),
        KnobSpec(Knob.GEMM_TILE, TILES, tile, "BM x BN x BK"),
        KnobSpec(Knob.GEMM_WARPS, (2, 4, 8, 16), 8 if bm * bn >= 128 * 128 else 4, "warps per tile"),
        KnobSpec(Knob.GEMM_STAGES, (1, 2, 3, 4, 5), 3, "software pipelining depth"),
        KnobSpec(Knob.GEMM_GROUP, (1, 4, 8, 16), 8, "row blocks per program group"),
        KnobSpec(Knob.GEMM_SPLIT_K, (1, 2, 4, 8, 16, 32), split, "K slices per output tile"),
        KnobSpec(Knob.INDEX, ("auto", "int64"), "auto", "offset width"),
        KnobSpec(Knob.GEMM_PRECISION, PRECISIONS, "tf32x3" if tensor_cores else "ieee",
                 "float32 FMA, or three TF32 tensor-core products"),
        KnobSpec(Knob.GEMM_OPERANDS, OPERAND_LAYOUTS, "k_major" if tensor_cores else "strided",
                 "operands read in place, copied row-major, or copied so that K is contiguous in both"),
    ]


def _epilogue(g: Gemm, region: Region | None, fast: bool) -> tuple[list[str], list[str], list[int]]:
    """(parameters, body lines computing `val` from `acc`, region inputs passed to the kernel)."""
    if region is None:
        return [], ["val = acc"], []
    pr = TritonPrinter(fast=fast)
    k_out = next(k for k, inp in enumerate(region.inputs) if inp.source == g.out_var)
    others = [k for k in range(len(region.inputs)) if k != k_out]
    bands = [k for k in others if region.inputs[k].kind in ("band0", "band1")]
    params = [f"p{k}" for k in others] + ["L"] + [f"{x}{k}" for k in bands for x in ("div", "mod")]
    ids = needed(region.exprs, [region.out])

    def load(k: int) -> str:
        if k == k_out:
            return "acc"
        return f"c{k}" if region.inputs[k].kind == "scalar" else f"x{k}"

    ref = leaf_ref(region, pr, "0.0", load, lambda i: f"v{i}")
    body = ["r = offs // L", "j = offs - r * L"] if bands else []
    body += [f"c{k} = tl.load(p{k})" for k in others if region.inputs[k].kind == "scalar"]
    body += ew_loads(region, ids, tiles=False, skip=k_out)
    body += emit_defs(region, ids, pr, ref, lambda i: f"v{i}", assign)
    body.append(f"val = {ref(region.out)} + tl.zeros([BM, BN], tl.float32)")
    return params, body, others


def gemm_kernel(g: Gemm, region: Region | None, s: Settings) -> tuple[list[str], list[str], list[int]]:
    """Triton source, the launch lines of `_gemm_<i>` (gemm.kernel=triton), and the fused region's
    inputs the kernel reads besides the product."""
    name = f"_k_gemm_{g.index}"
    bm, bn, bk = _tile(s[Knob.GEMM_TILE])
    wide = s.get(Knob.INDEX, "auto") == "int64"
    epi_params, epi_body, epi_inputs = _epilogue(g, region, s.get(Knob.MATH) == "fast")
    bias = ["bias"] if g.bias else []
    sizes = ["M", "N", "K", "sab", "sam", "sak", "sbb", "sbk", "sbn"]
    consts = ["BM: tl.constexpr", "BN: tl.constexpr", "BK: tl.constexpr", "GROUP_M: tl.constexpr",
              "SPLIT_K: tl.constexpr", "BIG: tl.constexpr"]
    ids = ["pid = tl.program_id(0)", "bid = tl.program_id(1)", "kid = tl.program_id(2)",
           "grid_m = tl.cdiv(M, BM)", "grid_n = tl.cdiv(N, BN)",
           "# group-M order: consecutive programs walk GROUP_M row blocks down one column of tiles",
           "group = pid // (GROUP_M * grid_n)", "first_m = group * GROUP_M",
           "rows_in_group = tl.minimum(grid_m - first_m, GROUP_M)",
           "pid_m = first_m + (pid % (GROUP_M * grid_n)) % rows_in_group",
           "pid_n = (pid % (GROUP_M * grid_n)) // rows_in_group",
           "rm = pid_m * BM + tl.arange(0, BM)", "rn = pid_n * BN + tl.arange(0, BN)", "rk = tl.arange(0, BK)"]
    if wide:
        ids += ["rm = rm.to(tl.int64)", "rn = rn.to(tl.int64)", "bid = bid.to(tl.int64)"]
    else:
        ids += ["if BIG:", "    rm = rm.to(tl.int64)", "    rn = rn.to(tl.int64)", "    bid = bid.to(tl.int64)"]
    mainloop = [
        "# this program's slice of K (all of it unless the product is split along K)",
        "k_per = tl.cdiv(tl.cdiv(K, SPLIT_K), BK) * BK",
        "k_lo = kid * k_per",
        "k_hi = tl.minimum(K, k_lo + k_per)",
    ] + _zero_tiles(region) + [
        "a_ptrs = a + bid * sab + rm[:, None] * sam + (k_lo + rk)[None, :] * sak",
        "b_ptrs = b + bid * sbb + (k_lo + rk)[:, None] * sbk + rn[None, :] * sbn",
        "acc = tl.zeros([BM, BN], dtype=tl.float32)",
        "for k0 in range(k_lo, k_hi, BK):",
        "    kmask = (k0 + rk) < k_hi",
        "    av = tl.load(a_ptrs, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)",
        "    bv = tl.load(b_ptrs, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)",
        _dot_line(s[Knob.GEMM_PRECISION]),
        "    a_ptrs += BK * sak",
        "    b_ptrs += BK * sbk",
    ]
    store = ["offs = (bid * M + rm)[:, None] * N + rn[None, :]", "mask = (rm < M)[:, None] & (rn < N)[None, :]"]
    finish = []
    if g.bias:
        finish.append("acc += tl.load(bias + rn, mask=rn < N, other=0.0)[None, :]")
    finish += epi_body + ["tl.store(c + offs, val, mask=mask)"]
    body = ids + mainloop + store + [
        "if SPLIT_K == 1:"] + ind(finish) + [
        "else:  # a partial tile: the sum kernel adds the slices, then the bias and the epilogue",
        "    tl.store(part + kid * (tl.num_programs(1) * M * N) + offs, acc, mask=mask)"]
    params = ["a", "b", "c", "part"] + bias + epi_params + sizes + consts
    src = ["@triton.jit", f"def {name}({', '.join(params)}):"] + ind(body)
    # the sum of split-K partial tiles, bias and epilogue: an elementwise pass over the output
    sum_params = ["c", "part"] + bias + epi_params + ["M", "N", "NB", "BM: tl.constexpr", "BN: tl.constexpr",
                                                       "SPLIT_K: tl.constexpr", "BIG: tl.constexpr"]
    sum_body = ["bid = tl.program_id(2)", "rm = tl.program_id(0) * BM + tl.arange(0, BM)",
                "rn = tl.program_id(1) * BN + tl.arange(0, BN)"]
    sum_body += (["rm = rm.to(tl.int64)", "rn = rn.to(tl.int64)", "bid = bid.to(tl.int64)"] if wide else
                 ["if BIG:", "    rm = rm.to(tl.int64)", "    rn = rn.to(tl.int64)", "    bid = bid.to(tl.int64)"])
    sum_body += store + ["acc = tl.zeros([BM, BN], dtype=tl.float32)", "for kid in range(0, SPLIT_K):",
                         "    acc += tl.load(part + kid * (NB * M * N) + offs, mask=mask, other=0.0)"] + finish
    src += ["", "@triton.jit", f"def {name}_sum({', '.join(sum_params)}):"] + ind(sum_body)
    args = ", ".join(["out_", "part"] + (["bias"] if g.bias else []) + ["*epi"])  # the sum kernel's
    big = "True" if wide else "big"
    launch = [
        f"BM, BN, BK = {bm}, {bn}, {bk}",
        f"split = max(1, min({s[Knob.GEMM_SPLIT_K]}, triton.cdiv(K, 4 * BK)))",
        "part = torch.empty((split, nb, M, N), device=out_.device, dtype=torch.float32) if split > 1 else out_",
        f"{name}[(triton.cdiv(M, BM) * triton.cdiv(N, BN), nb, split)](a3, b3, {args}, M, N, K, *strides, BM=BM, BN=BN, "
        f"BK=BK, GROUP_M={s[Knob.GEMM_GROUP]}, SPLIT_K=split, BIG={big}, num_warps={s[Knob.GEMM_WARPS]}, "
        f"num_stages={s[Knob.GEMM_STAGES]})",
        "if split > 1:",
        f"    {name}_sum[(triton.cdiv(M, 64), triton.cdiv(N, 64), nb)]({args}, M, N, nb, BM=64, BN=64, "
        f"SPLIT_K=split, BIG={big}, num_warps=4)",
    ]
    return src, launch, epi_inputs


def _dot_line(precision: str) -> str:
    if precision == "ieee":
        return '    acc += tl.dot(av, bv, input_precision="ieee")  # exact float32: no TF32'
    return f'    acc += tl.dot(av, bv, input_precision="{precision}")  # split float32: hi*hi + hi*lo + lo*hi'


def _zero_tiles(region: Region | None) -> list[str]:
    """A triu / tril epilogue zeroes whole tiles on the far side of the diagonal: skip their K loop."""
    tri = [e for e in region.exprs if e.op in TRIANGLE] if region is not None else []
    if len(tri) != 1:
        return []
    d = int(tri[0].value)
    if tri[0].op == "triu":  # kept where col - row >= d: none in the tile when its largest col - row < d
        empty = f"pid_n * BN + BN - 1 - pid_m * BM < {d}"
    else:  # kept where col - row <= d: none when the smallest col - row > d
        empty = f"pid_n * BN - (pid_m * BM + BM - 1) > {d}"
    return [f"k_hi = tl.where({empty}, k_lo, k_hi)  # a tile the {tri[0].op} zeroes: no product needed"]


def gemm_wrapper(g: Gemm, region: Region | None, launch: list[str], epi_inputs: list[int],
                 operands: str) -> list[str]:
    """`_gemm_<i>(a, b[, bias], *epi)`: the operands laid out as gemm.operands says (OPERAND_LAYOUTS;
    a copy is an O(K N) pass before an O(M N K) product), the output (the fused region's, when there
    is one) and the launch."""
    params = ["a", "b"] + (["bias"] if g.bias else []) + ["*epi"]
    lines = [f"def _gemm_{g.index}({', '.join(params)}):"]
    body = []
    if g.kind == "linear":
        body += ["lead, K = a.shape[:-1], a.shape[-1]", "a3 = a.reshape(1, -1, K)", "b3 = b.t().unsqueeze(0)",
                 "N = b.shape[0]", "oshape = (*lead, N)"]
    elif len(g.b_shape) == 2:
        body += ["lead, K = a.shape[:-1], a.shape[-1]", "a3 = a.reshape(1, -1, K)", "b3 = b.unsqueeze(0)",
                 "N = b.shape[1]", "oshape = (*lead, N)"]
    else:
        body += ["batch, K, N = a.shape[:-2], a.shape[-1], b.shape[-1]", "a3 = a.reshape(-1, a.shape[-2], K)",
                 "b3 = b.reshape(-1, K, N)", "oshape = (*batch, a.shape[-2], N)"]
    if operands == "contiguous":
        body.append("a3, b3 = a3.float().contiguous(), b3.float().contiguous()  # row-major: tiles read along rows")
    elif operands == "k_major":
        body += ["a3, b3 = a3.float().contiguous(), b3.float()  # K contiguous in both: what the tensor cores load",
                 "if b3.stride(1) != 1:",
                 "    b3 = b3.transpose(1, 2).contiguous().transpose(1, 2)"]
    else:
        body.append("a3, b3 = a3.float(), b3.float()  # strided views are read in place")
    body += [
             "nb, M = a3.shape[0], a3.shape[1]",
             "strides = (a3.stride(0) if a3.shape[0] > 1 else 0, a3.stride(1), a3.stride(2),",
             "           b3.stride(0) if b3.shape[0] > 1 else 0, b3.stride(1), b3.stride(2))",
             "out_ = torch.empty(oshape, device=a.device, dtype=torch.float32)",
             "if out_.numel() == 0:",
             "    return out_"]
    if g.bias:
        body.append("bias = _f32(bias)")
    if region is not None:
        kinds = "(" + "".join(f"{region.inputs[k].kind!r}, " for k in epi_inputs) + ")"
        # the fused region's operands, laid out against the output like the region's own wrapper would
        body += ["epi = _as_tensors([out_, *epi])[1:]", "dt = _out_dtype([out_, *epi])", "ts = [_f32(t) for t in epi]",
                 f"ts, L, bands = _ew_prepare(oshape, ts, {kinds})", "epi = [*ts, L, *bands]"]
    else:
        body.append("dt = torch.float32")
    body.append("big = max(a3.numel(), b3.numel(), out_.numel()) >= 2**31")
    body += launch
    body.append("return out_ if dt == torch.float32 else out_.to(dt)")
    return lines + ind(body)


def library_wrapper(g: Gemm) -> list[str]:
    params = ["a", "b"] + (["bias"] if g.bias else [])
    call = "torch.nn.functional.linear(a, b, bias)" if g.kind == "linear" and g.bias else (
        "torch.nn.functional.linear(a, b)" if g.kind == "linear" else "torch.matmul(a, b)")
    return [f"def _gemm_{g.index}({', '.join(params)}):", "    # the product in the library (cuBLAS / ATen); the "
            "fused tail runs after it", f"    return {call}"]
