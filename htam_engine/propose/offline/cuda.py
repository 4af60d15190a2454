"""CUDA C++ kernels for fused regions, built with torch.utils.cpp_extension.load_inline.

Elementwise kernels are templated on the index type (32-bit when the tensor is
small enough, avoiding 64-bit division); the float4 variant (ew.vec=4) reads and writes
float4 when pointers are 16-byte aligned and rows are 4-aligned, with a scalar
tail; threads per block, elements per thread and a flat or grid-stride grid are knobs
(ew.*). Row kernels (row.*): a block of row.block threads per row with a shared-memory
tree, or a warp per row with shuffles (row.map); one pass per reduction level or merged
online passes (row.pass); float4 row loads (row.vec); reducing a middle dimension uses
one thread per (outer, inner) column. Too few rows or
columns to fill the GPU (a loss, a reduction over a leading dim): slices of each go to separate
blocks/threads writing partial results to stream-ordered scratch (cudaMallocAsync), and a
second kernel combines them (schedule.split_reductions says when that is exact).

Split layout (nvcc never sees the torch headers, which cost most of a build): the .cu
unit holds the kernels and one `extern "C"` launcher per region taking raw pointers,
sizes and the stream, with only CUDA headers (load_inline(no_implicit_headers=True));
the C++ unit includes torch/extension.h and holds the torch::Tensor wrappers, which call
the launchers. The stream comes from Python (torch.cuda.current_stream().cuda_stream) so
the C++ unit needs no CUDA header and builds with the host compiler alone. A launcher
returns nullptr or the CUDA launch error's text, which the wrapper raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_engine.propose.offline.ir import ELEM, ROW, Region, needed
from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.printers import CPrinter, emit_defs, leaf_ref
from htam_engine.propose.offline.schedule import Reduction, build_schedule, elem_defs, row_defs, split_reductions
from htam_engine.propose.offline.space import Knob, KnobSpec, Settings

HEADER = """#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cmath>

static inline bool htam_aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

static inline int htam_num_sms() {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  }
  return sms;
}

static inline const char* htam_launch_status() {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
"""

CPP_HEADER = """#include <torch/extension.h>
#include <cstdint>
"""

# Launcher names carry a hash of the .cu text (PREFIX is replaced by it) so extern "C" symbols of
# different candidates never meet, in one process or in one test translation unit.
PREFIX = "@HTAM_PREFIX@"

THREADS = 256  # column and combine kernels
CFLAGS = ["-O3"]
CUDA_FLAGS = ["-O3"]
FAST_CUDA_FLAGS = ["-O3", "--use_fast_math"]


def _ind(lines: list[str], n: int = 2) -> list[str]:
    return [" " * n + ln if ln else ln for ln in lines]


def _decl(ctype: str, name: str, value: str) -> str:
    return f"const {ctype} {name} = {value};"


def _kparams(region: Region) -> list[str]:
    return [f"const float* __restrict__ p{k}" for k in range(len(region.inputs))] + ["float* __restrict__ po"]


def _hparams(region: Region) -> list[str]:
    return [f"torch::Tensor in{k}" for k in range(len(region.inputs))] + ["torch::Tensor out"]


def _lparams(region: Region) -> list[str]:
    """Launcher parameters: the tensors' data as raw pointers."""
    return [f"const float* in{k}" for k in range(len(region.inputs))] + ["float* out"]


def _kargs(region: Region) -> list[str]:
    return [f"in{k}" for k in range(len(region.inputs))] + ["out"]


def _targs(region: Region) -> list[str]:
    return [f"in{k}.data_ptr<float>()" for k in range(len(region.inputs))] + ["out.data_ptr<float>()"]


def _launch(kernel: str, grid: str, block: str, args: list[str]) -> list[str]:
    return [f"{kernel}<<<{grid}, {block}, 0, stream>>>({', '.join(args)});"]


def _launcher_head(idx: int, params: list[str]) -> list[str]:
    return [f'extern "C" const char* {PREFIX}region_{idx}_launch({", ".join(params + ["void* stream_ptr"])}) {{',
            "  const cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);"]


def _wrapper(idx: int, lparams: list[str], params: list[str], args: list[str]) -> str:
    """The C++ unit's torch::Tensor entry point for one region, after its launcher's declaration."""
    return "\n".join([
        f'extern "C" const char* {PREFIX}region_{idx}_launch({", ".join(lparams + ["void* stream_ptr"])});',
        f"void region_{idx}({', '.join(params + ['int64_t stream'])}) {{",
        f"  const char* err = {PREFIX}region_{idx}_launch({', '.join(args + ['reinterpret_cast<void*>(stream)'])});",
        f'  TORCH_CHECK(err == nullptr, "region_{idx}: CUDA kernel launch failed: ", err);',
        "}",
    ])


# ---------------------------------------------------------------- design space


def ew_space(region: Region) -> list[KnobSpec]:
    return [
        KnobSpec(Knob.EW_BLOCK, (128, 256, 512, 1024), 256, "threads per block"),
        KnobSpec(Knob.EW_ITEMS, (1, 2, 4, 8), 4, "elements per thread"),
        KnobSpec(Knob.EW_VEC, (1, 4), 1, "float4 loads and stores when aligned"),
        KnobSpec(Knob.EW_GRID, ("flat", "persistent"), "flat", "one thread per element group or a grid-stride loop"),
        KnobSpec(Knob.INDEX, ("auto", "int64"), "auto", "offset width"),
    ]


def row_space(region: Region) -> list[KnobSpec]:
    merged = build_schedule(region, online=True).merged
    specs = [
        KnobSpec(Knob.ROW_BLOCK, (64, 128, 256, 512, 1024), 256, "threads per row block"),
        KnobSpec(Knob.ROW_MAP, ("block", "warp"), "block", "a block or a warp per row"),
        KnobSpec(Knob.ROW_PASS, ("multi", "online") if merged else ("multi",), "multi", "passes over the row"),
        KnobSpec(Knob.ROW_VEC, (1, 4), 1, "float4 row loads when aligned"),
    ]
    if split_reductions(region) is not None:
        specs.append(KnobSpec(Knob.SPLIT, ("auto", "off", "wide"), "auto", "split few long rows or columns"))
    return specs


# ---------------------------------------------------------------- elementwise


def ew_source(region: Region, s: Settings) -> str:
    pr = CPrinter(cuda=True, fast=s[Knob.MATH] == "fast")
    grid, vec4, items = s[Knob.EW_GRID], s[Knob.EW_VEC] == 4, s[Knob.EW_ITEMS]
    idx = region.index
    bands = [k for k, i in enumerate(region.inputs) if i.kind in ("band0", "band1")]
    band_params = [f"IT div{k}, IT mod{k}" for k in bands]
    ids = needed(region.exprs, [region.out])

    def body(i: str, suffix: str, vec_loads: dict[int, str] | None = None) -> list[str]:
        def load(k: int) -> str:
            kind = region.inputs[k].kind
            if vec_loads and k in vec_loads:
                return vec_loads[k]
            if kind == "scalar":
                return f"__ldg(p{k})"
            if kind == "full":
                return f"__ldg(p{k} + {i})"
            if kind == "band1":
                return f"__ldg(p{k} + ((r{suffix} / div{k}) % mod{k}) * L + j{suffix})"
            return f"__ldg(p{k} + (r{suffix} / div{k}) % mod{k})"

        ref = leaf_ref(region, pr, "0.0f", load, lambda e: f"v{e}{suffix}")
        lines = []
        if bands:
            lines += [f"const IT r{suffix} = {i} / L;", f"const IT j{suffix} = {i} - r{suffix} * L;"]
        lines += emit_defs(region, ids, pr, ref, lambda e: f"v{e}{suffix}", _decl)
        return lines, ref(region.out)

    def store(i: str) -> list[str]:
        lines, value = body(i, "")
        return lines + [f"po[{i}] = {value};"]

    params = ", ".join(_kparams(region) + ["IT n", "IT L"] + band_params)
    src = [f"template <typename IT>", f"__global__ void k_region_{idx}({params}) {{"]
    if grid == "persistent":
        src += _ind(["for (IT i = (IT)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (IT)gridDim.x * blockDim.x) {"]
                    + _ind(store("i")) + ["}"])
    else:
        # `items` elements per thread, a block-width apart (coalesced): more loads in flight per
        # thread than one element each, which leaves a memory-bound kernel short of the bandwidth
        src += _ind([f"const IT base = (IT)blockIdx.x * (blockDim.x * {items}) + threadIdx.x;", "#pragma unroll",
                     f"for (int u = 0; u < {items}; ++u) {{", "  const IT i = base + (IT)u * blockDim.x;",
                     "  if (i < n) {"] + _ind(store("i"), 4) + ["  }", "}"])
    src.append("}")
    if vec4:
        src += ["", "template <typename IT>", f"__global__ void k_region_{idx}_vec4({params}) {{"]
        inner = ["const IT c = (IT)blockIdx.x * blockDim.x + threadIdx.x;", "const IT i0 = c * 4;",
                 "if (i0 + 4 <= n) {"]
        vec = []
        for k, inp in enumerate(region.inputs):
            if inp.kind == "full":
                vec.append(f"const float4 q{k} = __ldg(reinterpret_cast<const float4*>(p{k} + i0));")
        lanes, outs = [], []
        comps = "xyzw"
        for lane in range(4):
            loads = {k: f"q{k}.{comps[lane]}" for k, inp in enumerate(region.inputs) if inp.kind == "full"}
            lane_lines, value = body(f"(i0 + {lane})", f"_{lane}", loads)
            lanes += lane_lines
            outs.append(value)
        inner += _ind(vec + lanes + [f"*reinterpret_cast<float4*>(po + i0) = make_float4({', '.join(outs)});"])
        inner += ["} else {", "  for (IT i = i0; i < n; ++i) {"] + _ind(store("i"), 4) + ["  }", "}"]
        src += _ind(inner) + ["}"]
    sizes = ["int64_t L"] + [f"int64_t div{k}, int64_t mod{k}" for k in bands]
    host = _launcher_head(idx, _lparams(region) + ["int64_t n"] + sizes) + [f"  const int threads = {s[Knob.EW_BLOCK]};"]
    band_args = [f"(IT)div{k}, (IT)mod{k}" for k in bands]

    def launches(it: str) -> list[str]:
        args = _kargs(region) + ["(IT)n", "(IT)L"] + band_args
        args = [a.replace("(IT)", f"({it})") for a in args]
        if grid == "persistent":
            dims = "(unsigned)std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, (int64_t)htam_num_sms() * 8))"
            return _launch(f"k_region_{idx}<{it}>", dims, "threads", args)
        per_block = f"threads * {items}"
        scalar = _launch(f"k_region_{idx}<{it}>", f"(unsigned)((n + {per_block} - 1) / ({per_block}))", "threads", args)
        if not vec4:
            return scalar
        checks = " && ".join(
            [f"htam_aligned16(in{k})" for k, i in enumerate(region.inputs) if i.kind == "full"]
            + ["htam_aligned16(out)"])
        vec = _launch(f"k_region_{idx}_vec4<{it}>", "(unsigned)((n / 4 + 1 + threads - 1) / threads)", "threads", args)
        return [f"if ({checks}) {{"] + _ind(vec) + ["} else {"] + _ind(scalar) + ["}"]

    if s[Knob.INDEX] == "int64":
        body = launches("int64_t")
    else:  # 32-bit index arithmetic (cheaper division for broadcast operands) while the tensor fits
        body = ["if (n < (int64_t)1 << 30) {"] + _ind(launches("int32_t")) + ["} else {"] + _ind(
            launches("int64_t")) + ["}"]
    host += _ind(["if (n == 0) return nullptr;"] + body + ["return htam_launch_status();"]) + ["}"]
    return "\n".join(src + [""] + host) + "\n"


def ew_wrapper(region: Region) -> str:
    bands = [k for k, i in enumerate(region.inputs) if i.kind in ("band0", "band1")]
    sizes = ["int64_t L"] + [f"int64_t div{k}, int64_t mod{k}" for k in bands]
    size_args = ["L"] + [f"div{k}, mod{k}" for k in bands]
    return _wrapper(region.index, _lparams(region) + ["int64_t n"] + sizes, _hparams(region) + sizes,
                    _targs(region) + ["out.numel()"] + size_args)


# ---------------------------------------------------------------- rows

_INIT = {"red_sum": "0.0f", "red_mean": "0.0f", "red_max": "-INFINITY", "red_min": "INFINITY"}
_OP = {"red_sum": "{a} + {b}", "red_mean": "{a} + {b}", "red_max": "fmaxf({a}, {b})", "red_min": "fminf({a}, {b})"}


def _combine(op: str, acc: str, v: str) -> str:
    return f"{acc} = {_OP[op].format(a=acc, b=v)};"


class _RowCuda:
    """Per-row code: a block of `threads` per row (or a warp per row), one pass per reduction level
    or merged online passes, scalar or float4 loads."""

    def __init__(self, region: Region, s: Settings, *, warp: bool, online: bool, vec: bool):
        self.r = region
        self.warp = warp
        self.threads = s[Knob.ROW_BLOCK]
        self.pr = CPrinter(cuda=True, fast=s[Knob.MATH] == "fast")
        self.sched = build_schedule(region, online=online)
        self.defined: set[int] = set()
        self.vec = vec
        self.lo, self.hi = "0", "R"  # the slice of the row this block walks (split kernels walk part)

    def ref(self, suffix: str = "", vec_loads: dict[int, str] | None = None):
        def load(k: int) -> str:
            kind = self.r.inputs[k].kind
            if vec_loads and k in vec_loads:
                return vec_loads[k]
            return {
                "scalar": f"__ldg(p{k})", "outfull": f"__ldg(p{k} + o)", "rpos": f"__ldg(p{k} + r{suffix})",
            }.get(kind, f"__ldg(row{k} + r{suffix})")

        return leaf_ref(self.r, self.pr, "cnt", load,
                        lambda i: f"v{i}" if self.r.levels[i] != ELEM else f"v{i}{suffix}")

    def elem(self, roots: list[int], suffix: str = "", vec_loads: dict[int, str] | None = None) -> list[str]:
        ids = elem_defs(self.r, roots)
        return emit_defs(self.r, ids, self.pr, self.ref(suffix, vec_loads), lambda i: f"v{i}{suffix}", _decl)

    def rows(self, roots: list[int]) -> list[str]:
        ids = row_defs(self.r, roots, self.defined)
        self.defined.update(ids)
        return emit_defs(self.r, ids, self.pr, self.ref(), lambda i: f"v{i}", _decl)

    def loop(self, per_element) -> list[str]:
        """A strided loop over the row calling per_element(suffix, vec_loads) for each element."""
        step = "32" if self.warp else "blockDim.x"
        start = "lane" if self.warp else "threadIdx.x"
        if not self.vec:
            return ([f"for (int64_t r = {self.lo} + {start}; r < {self.hi}; r += {step}) {{"]
                    + _ind(per_element("", None)) + ["}"])
        comps = "xyzw"
        lines = [f"for (int64_t c4 = {start}; c4 < R / 4; c4 += {step}) {{"]
        body = []
        for k, inp in enumerate(self.r.inputs):
            if inp.kind in ("full", "rpos"):
                base = f"row{k}" if inp.kind == "full" else f"p{k}"
                body.append(f"const float4 q{k} = __ldg(reinterpret_cast<const float4*>({base}) + c4);")
        for lane in range(4):
            loads = {k: f"q{k}.{comps[lane]}" for k, inp in enumerate(self.r.inputs) if inp.kind in ("full", "rpos")}
            body += [f"const int64_t r_{lane} = c4 * 4 + {lane};"] + per_element(f"_{lane}", loads)
        lines += _ind(body) + ["}", f"for (int64_t r = (R / 4) * 4 + {start}; r < R; r += {step}) {{"]
        lines += _ind(per_element("", None)) + ["}"]
        return lines

    def reduce_lines(self, tag: str, vars_ops: list[tuple[str, str]]) -> list[str]:
        """Combine per-thread accumulators across the row's threads; every thread gets the result."""
        if self.warp:
            lines = ["for (int off = 16; off > 0; off >>= 1) {"]
            for var, combine in vars_ops:
                lines.append(f"  {{ const float other = __shfl_xor_sync(0xffffffffu, {var}, off); "
                             f"{combine.replace('$b', 'other').replace('$a', var)} }}")
            return lines + ["}"]
        lines = []
        for var, _ in vars_ops:
            lines.append(f"sh_{var}[threadIdx.x] = {var};")
        lines.append("__syncthreads();")
        lines.append("for (int s = blockDim.x / 2; s > 0; s >>= 1) {")
        lines.append("  if (threadIdx.x < s) {")
        for var, combine in vars_ops:
            lines.append(f"    {{ const float other = sh_{var}[threadIdx.x + s]; float mine = sh_{var}[threadIdx.x]; "
                         f"{combine.replace('$b', 'other').replace('$a', 'mine')} sh_{var}[threadIdx.x] = mine; }}")
        lines += ["  }", "  __syncthreads();", "}"]
        for var, _ in vars_ops:
            lines.append(f"{var} = sh_{var}[0];")
        lines.append("__syncthreads();")
        return lines

    def pass_lines(self, reds: list[Reduction]) -> tuple[list[str], list[str]]:
        """(code, shared-array names) for one schedule pass."""
        exprs = self.r.exprs
        roots = [red.arg for red in reds]
        lines = self.rows(roots)
        init, fin, shared, vars_ops = [], [], [], []
        for red in reds:
            a = red.ids[0]
            if red.kind == "plain":
                op = exprs[a].op
                init.append(f"float acc{a} = {_INIT[op]};")
                vars_ops.append((f"acc{a}", _combine(op, "$a", "$b")))
                fin.append(f"const float v{a} = acc{a} / cnt;" if op == "red_mean" else f"const float v{a} = acc{a};")
            elif red.kind == "softmax":
                m, s = red.ids
                init += [f"float om{m} = -INFINITY;", f"float os{m} = 0.0f;"]
                fin += [f"const float v{m} = om{m};", f"const float v{s} = os{m};"]
            else:
                mu, sq = red.ids
                init += [f"float wn{mu} = 0.0f;", f"float wm{mu} = 0.0f;", f"float wq{mu} = 0.0f;"]
                fin += [f"const float v{mu} = " + (f"wm{mu};" if exprs[mu].op == "red_mean" else f"wm{mu} * cnt;"),
                        f"const float v{sq} = " + (f"wq{mu} / cnt;" if exprs[sq].op == "red_mean" else f"wq{mu};")]

        def per_element(suffix: str, vec_loads: dict[int, str] | None) -> list[str]:
            out = self.elem(roots, suffix, vec_loads)
            ref = self.ref(suffix, vec_loads)
            for red in reds:
                a = red.ids[0]
                v = ref(red.arg)
                if red.kind == "plain":
                    out.append(_combine(exprs[a].op, f"acc{a}", v))
                elif red.kind == "softmax":
                    m = a
                    out += [f"{{ const float x_ = {v}; if (x_ > om{m}) {{ os{m} = os{m} * __expf(om{m} - x_) + 1.0f; "
                            f"om{m} = x_; }} else {{ os{m} += __expf(x_ - om{m}); }} }}"]
                else:
                    mu = a
                    out += [f"{{ const float x_ = {v}; wn{mu} += 1.0f; const float d_ = x_ - wm{mu}; "
                            f"wm{mu} += d_ / wn{mu}; wq{mu} += d_ * (x_ - wm{mu}); }}"]
            return out

        body = lines + init + self.loop(per_element)
        # cross-thread combination
        plain = [(v, op) for v, op in vars_ops]
        if plain:
            body += self.reduce_lines("p", plain)
            shared += [v for v, _ in plain]
        for red in reds:
            if red.kind == "softmax":
                m = red.ids[0]
                body += self._pair_reduce(f"om{m}", f"os{m}", shared)
            elif red.kind == "welford":
                body += self._welford_reduce(red.ids[0], shared)
        for red in reds:
            self.defined.update(red.ids)
        return body + fin, shared

    def _pair_reduce(self, m: str, s: str, shared: list[str]) -> list[str]:
        # (m, s) pairs combine as m = max(m1, m2), s = s1 e^(m1-m) + s2 e^(m2-m); -inf-safe
        comb = ("{ const float mm = fmaxf($m1, $m2); "
                "const float a1 = ($m1 == -INFINITY) ? 0.0f : $s1 * __expf($m1 - mm); "
                "const float a2 = ($m2 == -INFINITY) ? 0.0f : $s2 * __expf($m2 - mm); "
                "$m1 = mm; $s1 = a1 + a2; }")
        if self.warp:
            c = comb.replace("$m1", m).replace("$s1", s).replace("$m2", "om_").replace("$s2", "os_")
            return ["for (int off = 16; off > 0; off >>= 1) {",
                    f"  const float om_ = __shfl_xor_sync(0xffffffffu, {m}, off);",
                    f"  const float os_ = __shfl_xor_sync(0xffffffffu, {s}, off);", f"  {c}", "}"]
        shared += [m, s]
        c = comb.replace("$m1", "ma").replace("$s1", "sa").replace("$m2", "mb").replace("$s2", "sb")
        return [f"sh_{m}[threadIdx.x] = {m}; sh_{s}[threadIdx.x] = {s};", "__syncthreads();",
                "for (int st = blockDim.x / 2; st > 0; st >>= 1) {", "  if (threadIdx.x < st) {",
                f"    float ma = sh_{m}[threadIdx.x], sa = sh_{s}[threadIdx.x];",
                f"    const float mb = sh_{m}[threadIdx.x + st], sb = sh_{s}[threadIdx.x + st];",
                f"    {c}", f"    sh_{m}[threadIdx.x] = ma; sh_{s}[threadIdx.x] = sa;", "  }", "  __syncthreads();",
                "}", f"{m} = sh_{m}[0]; {s} = sh_{s}[0];", "__syncthreads();"]

    def _welford_reduce(self, mu: int, shared: list[str]) -> list[str]:
        # Chan et al.: n = na + nb, d = mb - ma, mean = ma + d nb / n, M2 = M2a + M2b + d^2 na nb / n
        comb = ("{ const float nn = $na + $nb; if (nn > 0.0f) { const float d = $mb - $ma; "
                "$ma = $ma + d * ($nb / nn); $qa = $qa + $qb + d * d * ($na * $nb / nn); $na = nn; } }")
        n, m, q = f"wn{mu}", f"wm{mu}", f"wq{mu}"
        if self.warp:
            c = comb.replace("$na", n).replace("$ma", m).replace("$qa", q)
            c = c.replace("$nb", "nb_").replace("$mb", "mb_").replace("$qb", "qb_")
            return ["for (int off = 16; off > 0; off >>= 1) {",
                    f"  const float nb_ = __shfl_xor_sync(0xffffffffu, {n}, off);",
                    f"  const float mb_ = __shfl_xor_sync(0xffffffffu, {m}, off);",
                    f"  const float qb_ = __shfl_xor_sync(0xffffffffu, {q}, off);", f"  {c}", "}"]
        shared += [n, m, q]
        c = comb.replace("$na", "na").replace("$ma", "ma").replace("$qa", "qa")
        c = c.replace("$nb", "nb").replace("$mb", "mb").replace("$qb", "qb")
        return [f"sh_{n}[threadIdx.x] = {n}; sh_{m}[threadIdx.x] = {m}; sh_{q}[threadIdx.x] = {q};", "__syncthreads();",
                "for (int st = blockDim.x / 2; st > 0; st >>= 1) {", "  if (threadIdx.x < st) {",
                f"    float na = sh_{n}[threadIdx.x], ma = sh_{m}[threadIdx.x], qa = sh_{q}[threadIdx.x];",
                f"    const float nb = sh_{n}[threadIdx.x + st], mb = sh_{m}[threadIdx.x + st], "
                f"qb = sh_{q}[threadIdx.x + st];",
                f"    {c}", f"    sh_{n}[threadIdx.x] = na; sh_{m}[threadIdx.x] = ma; sh_{q}[threadIdx.x] = qa;",
                "  }", "  __syncthreads();", "}", f"{n} = sh_{n}[0]; {m} = sh_{m}[0]; {q} = sh_{q}[0];",
                "__syncthreads();"]

    def split_kernels(self, name: str, reds: list[Reduction]) -> list[str]:
        """For few long rows: <name>_part (a block per slice `sp` of row `o`) writes its partial
        results to part[o, sp, j]; <name>_fin (a thread per row) combines them into the output."""
        n = len(reds)
        self.lo, self.hi = "lo", "hi"
        head = ["const int64_t o = blockIdx.x / SPLIT;", "const int64_t sp = blockIdx.x - o * SPLIT;",
                "const int64_t lo = sp * CH;", "const int64_t hi = lo + CH < R ? lo + CH : R;"]
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "full":
                head.append(f"const float* __restrict__ row{k} = p{k} + o * R;")
        body, shared = self.pass_lines(reds)
        body.append("if (threadIdx.x == 0) {")
        body += [f"  part[(o * SPLIT + sp) * {n} + {j}] = v{red.ids[0]};" for j, red in enumerate(reds)]
        body.append("}")
        decl = [f"__shared__ float sh_{v}[{self.threads}];" for v in dict.fromkeys(shared)]
        params = ", ".join(_kparams(self.r) + ["float* __restrict__ part", "int64_t R", "int64_t SPLIT", "int64_t CH",
                                               "float cnt"])
        src = [f"__global__ void {name}_part({params}) {{"] + _ind(decl + head + body) + ["}", ""]
        fin = ["const int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;", "if (o >= outer) return;"]
        for j, red in enumerate(reds):
            a = red.ids[0]
            op = self.r.exprs[a].op
            fin += [f"float acc{a} = {_INIT[op]};",
                    f"for (int64_t s = 0; s < SPLIT; ++s) {_combine(op, f'acc{a}', f'part[(o * SPLIT + s) * {n} + {j}]')}",
                    f"const float v{a} = acc{a};"]
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self.rows([self.r.out]) + [f"po[o] = {self.ref()(self.r.out)};"]
        params = ", ".join(_kparams(self.r) + ["const float* __restrict__ part", "int64_t outer", "int64_t SPLIT",
                                               "float cnt"])
        return src + [f"__global__ void {name}_fin({params}) {{"] + _ind(fin) + ["}"]

    def kernel(self, name: str) -> list[str]:
        params = ", ".join(_kparams(self.r) + ["int64_t outer", "int64_t R", "float cnt"])
        if self.warp:
            head = ["const int64_t o = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;",
                    "const int lane = threadIdx.x & 31;", "if (o >= outer) return;"]
        else:
            head = ["const int64_t o = blockIdx.x;"]
        for k, inp in enumerate(self.r.inputs):
            if inp.kind == "full":
                head.append(f"const float* __restrict__ row{k} = p{k} + o * R;")
        body, shared = [], []
        for reds in self.sched.passes:
            lines, sh = self.pass_lines(reds)
            body += lines
            shared += sh
        out = self.r.out
        body += self.rows([out])
        ref = self.ref()
        if self.r.levels[out] == ROW:
            first = "lane == 0" if self.warp else "threadIdx.x == 0"
            body.append(f"if ({first}) po[o] = {ref(out)};")
        else:
            def write(suffix: str, vec_loads: dict[int, str] | None) -> list[str]:
                lines = self.elem([out], suffix, vec_loads)
                return lines + [f"po[o * R + r{suffix}] = {self.ref(suffix, vec_loads)(out)};"]

            body += self.loop(write)
        decl = [f"__shared__ float sh_{v}[{self.threads}];" for v in dict.fromkeys(shared)]
        return [f"__global__ void {name}({params}) {{"] + _ind(decl + head + body) + ["}"]


class _ColumnCuda:
    """Reducing a middle dimension: one thread per (outer, inner) column, looping over R."""

    def __init__(self, region: Region, s: Settings):
        self.r = region
        self.pr = CPrinter(cuda=True, fast=s[Knob.MATH] == "fast")
        self.sched = build_schedule(region, online=False)
        self.defined: set[int] = set()

    def ref(self):
        def load(k: int) -> str:
            kind = self.r.inputs[k].kind
            return {"scalar": f"__ldg(p{k})", "outfull": f"__ldg(p{k} + o * inner + q)", "rpos": f"__ldg(p{k} + r)"}.get(
                kind, f"__ldg(p{k} + (o * R + r) * inner + q)")

        return leaf_ref(self.r, self.pr, "cnt", load, lambda i: f"v{i}")

    def pass_lines(self, reds: list[Reduction], lo: str = "0", hi: str = "R") -> list[str]:
        exprs = self.r.exprs
        ref = self.ref()
        roots = [red.arg for red in reds]
        ids = row_defs(self.r, roots, self.defined)
        self.defined.update(ids)
        body = emit_defs(self.r, ids, self.pr, ref, lambda i: f"v{i}", _decl)
        init, step, fin = [], [], []
        for red in reds:
            a = red.ids[0]
            op = exprs[a].op
            init.append(f"float acc{a} = {_INIT[op]};")
            step.append(_combine(op, f"acc{a}", ref(red.arg)))
            fin.append(f"const float v{a} = acc{a} / cnt;" if op == "red_mean" else f"const float v{a} = acc{a};")
            self.defined.add(a)
        el = emit_defs(self.r, elem_defs(self.r, roots), self.pr, ref, lambda i: f"v{i}", _decl)
        return body + init + [f"for (int64_t r = {lo}; r < {hi}; ++r) {{"] + _ind(el + step) + ["}"] + fin

    def out_lines(self) -> list[str]:
        ref = self.ref()
        out = self.r.out
        ids = row_defs(self.r, [out], self.defined)
        return emit_defs(self.r, ids, self.pr, ref, lambda i: f"v{i}", _decl)

    def split_kernels(self, name: str, reds: list[Reduction]) -> list[str]:
        """For few columns: <name>_part (a thread per column and slice `sp` of the reduced dim)
        writes part[o, sp, j, q]; <name>_fin (a thread per column) combines the slices."""
        n = len(reds)
        head = ["const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;",
                "if (t >= outer * inner * SPLIT) return;", "const int64_t q = t % inner;",
                "const int64_t o = (t / inner) % outer;", "const int64_t sp = t / (inner * outer);",
                "const int64_t lo = sp * CH;", "const int64_t hi = lo + CH < R ? lo + CH : R;"]
        body = self.pass_lines(reds, "lo", "hi")
        body += [f"part[((o * SPLIT + sp) * {n} + {j}) * inner + q] = v{red.ids[0]};" for j, red in enumerate(reds)]
        params = ", ".join(_kparams(self.r) + ["float* __restrict__ part", "int64_t outer", "int64_t R",
                                               "int64_t inner", "int64_t SPLIT", "int64_t CH", "float cnt"])
        src = [f"__global__ void {name}_part({params}) {{"] + _ind(head + body) + ["}", ""]
        fin = ["const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;", "if (t >= outer * inner) return;",
               "const int64_t o = t / inner;", "const int64_t q = t - o * inner;"]
        for j, red in enumerate(reds):
            a = red.ids[0]
            op = self.r.exprs[a].op
            x = f"part[((o * SPLIT + s) * {n} + {j}) * inner + q]"
            fin += [f"float acc{a} = {_INIT[op]};", f"for (int64_t s = 0; s < SPLIT; ++s) {_combine(op, f'acc{a}', x)}",
                    f"const float v{a} = acc{a};"]
        self.defined = {i for red in reds for i in red.ids}  # a fresh kernel: row values are recomputed
        fin += self.out_lines() + [f"po[o * inner + q] = {self.ref()(self.r.out)};"]
        params = ", ".join(_kparams(self.r) + ["const float* __restrict__ part", "int64_t outer", "int64_t inner",
                                               "int64_t SPLIT", "float cnt"])
        return src + [f"__global__ void {name}_fin({params}) {{"] + _ind(fin) + ["}"]

    def kernel(self, name: str) -> list[str]:
        params = ", ".join(_kparams(self.r) + ["int64_t outer", "int64_t R", "int64_t inner", "float cnt"])
        head = ["const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;", "if (t >= outer * inner) return;",
                "const int64_t o = t / inner;", "const int64_t q = t - o * inner;"]
        body: list[str] = []
        ref = self.ref()
        for reds in self.sched.passes:
            body += self.pass_lines(reds)
        out = self.r.out
        body += self.out_lines()
        if self.r.levels[out] == ROW:
            body.append(f"po[o * inner + q] = {ref(out)};")
        else:
            el = emit_defs(self.r, elem_defs(self.r, [out]), self.pr, ref, lambda i: f"v{i}", _decl)
            body += ["for (int64_t r = 0; r < R; ++r) {"] + _ind(el + [f"po[(o * R + r) * inner + q] = {ref(out)};"]) + ["}"]
        return [f"__global__ void {name}({params}) {{"] + _ind(head + body) + ["}"]


def row_source(region: Region, s: Settings) -> str:
    idx = region.index
    warp, vec, threads = s[Knob.ROW_MAP] == "warp", s[Knob.ROW_VEC] == 4, s[Knob.ROW_BLOCK]
    online = s[Knob.ROW_PASS] == "online"
    src = _RowCuda(region, s, warp=warp, online=online, vec=vec).kernel(f"k_region_{idx}")
    if vec:  # unaligned rows or a length not a multiple of 4
        src += [""] + _RowCuda(region, s, warp=warp, online=online, vec=False).kernel(f"k_region_{idx}_rows")
    src += [""] + _ColumnCuda(region, s).kernel(f"k_region_{idx}_cols")
    args = _kargs(region)
    host = _launcher_head(idx, _lparams(region) + ["int64_t numel", "int64_t outer", "int64_t R", "int64_t inner"])
    host += ["  if (numel == 0) return nullptr;", "  const float cnt = (float)R;", "  if (inner == 1) {"]

    def row_launch(kernel: str) -> list[str]:
        if warp:
            per = threads // 32
            return _launch(kernel, f"(unsigned)((outer + {per} - 1) / {per})", str(threads), args + ["outer", "R", "cnt"])
        return _launch(kernel, "(unsigned)outer", str(threads), args + ["outer", "R", "cnt"])

    rows = row_launch(f"k_region_{idx}")
    if vec:
        vec_inputs = [k for k, i in enumerate(region.inputs) if i.kind in ("full", "rpos")]
        checks = " && ".join(["R % 4 == 0"] + [f"htam_aligned16(in{k})" for k in vec_inputs])
        rows = [f"if ({checks}) {{"] + _ind(rows) + ["} else {"] + _ind(row_launch(f"k_region_{idx}_rows")) + ["}"]
    cols = _launch(f"k_region_{idx}_cols", f"(unsigned)((outer * inner + {THREADS} - 1) / {THREADS})",
                   str(THREADS), args + ["outer", "R", "inner", "cnt"])
    split = split_reductions(region) if s.get(Knob.SPLIT, "off") != "off" else None
    if split:
        wide = s[Knob.SPLIT] == "wide"
        block = _RowCuda(region, s, warp=False, online=False, vec=False)
        src += [""] + block.split_kernels(f"k_region_{idx}", split)
        src += [""] + _ColumnCuda(region, s).split_kernels(f"k_region_{idx}_cols", split)
        rows = _split_rows(idx, args, len(split), rows, threads, wide)
        cols = _split_cols(idx, args, len(split), cols, wide)
    host += _ind(rows, 4) + ["  } else {"] + _ind(cols, 4) + ["  }", "  return htam_launch_status();", "}"]
    return "\n".join(src + [""] + host) + "\n"


def _split(when: str, split: str, count: str, launches: list[str], plain: list[str]) -> list[str]:
    """`if (when)`: SPLIT slices of CH rows each (SPLIT from `split`, evened out), partial results
    in stream-ordered scratch of `count` floats around the two launches; else the plain launch."""
    body = [
        "const int64_t sms = htam_num_sms();",
        f"int64_t SPLIT = {split};",
        "const int64_t CH = (R + SPLIT - 1) / SPLIT;",
        "SPLIT = (R + CH - 1) / CH;",
        "float* part = nullptr;",
        f"const cudaError_t alloc = cudaMallocAsync(reinterpret_cast<void**>(&part), ({count}) * sizeof(float), stream);",
        "if (alloc != cudaSuccess) return cudaGetErrorString(alloc);",
        *launches,
        "cudaFreeAsync(part, stream);",
    ]
    return [f"if ({when}) {{"] + _ind(body) + ["} else {"] + _ind(plain) + ["}"]


def _split_rows(idx: int, args: list[str], n: int, plain: list[str], threads: int, wide: bool) -> list[str]:
    """Few long rows (a loss, a whole-tensor reduction): slices of each row go to separate blocks."""
    few, min_r, per_sm = (8, 16384, 8) if wide else (2, 65536, 4)
    return _split(
        f"outer < {few} * (int64_t)htam_num_sms() && R >= {min_r}",
        f"std::min<int64_t>(({per_sm} * sms + outer - 1) / outer, (R + 16383) / 16384)",
        f"outer * SPLIT * {n}",
        [*_launch(f"k_region_{idx}_part", "(unsigned)(outer * SPLIT)", str(threads),
                  args + ["part", "R", "SPLIT", "CH", "cnt"]),
         *_launch(f"k_region_{idx}_fin", "(unsigned)((outer + 255) / 256)", "256", args + ["part", "outer", "SPLIT", "cnt"])],
        plain)


def _split_cols(idx: int, args: list[str], n: int, plain: list[str], wide: bool) -> list[str]:
    """Few columns (a reduction over a leading dim): slices of the reduced dim go to separate threads."""
    few, per_sm = (2048, 8192) if wide else (512, 2048)
    return _split(
        f"outer * inner < {few} * (int64_t)htam_num_sms() && R >= 64",
        f"std::min<int64_t>(({per_sm} * sms + outer * inner - 1) / (outer * inner), (R + 31) / 32)",
        f"outer * SPLIT * {n} * inner",
        [*_launch(f"k_region_{idx}_cols_part", f"(unsigned)((outer * inner * SPLIT + {THREADS} - 1) / {THREADS})",
                  str(THREADS), args + ["part", "outer", "R", "inner", "SPLIT", "CH", "cnt"]),
         *_launch(f"k_region_{idx}_cols_fin", f"(unsigned)((outer * inner + {THREADS} - 1) / {THREADS})", str(THREADS),
                  args + ["part", "outer", "inner", "SPLIT", "cnt"])],
        plain)


def row_wrapper(region: Region) -> str:
    sizes = ["int64_t outer", "int64_t R", "int64_t inner"]
    return _wrapper(region.index, _lparams(region) + ["int64_t numel"] + sizes, _hparams(region) + sizes,
                    _targs(region) + ["out.numel()", "outer", "R", "inner"])


@dataclass(slots=True)
class CudaSources:
    """What the load_inline emitter needs: the .cu and C++ units, entry points and flags."""

    cuda_text: str
    cpp_text: str
    functions: list[str]
    cuda_flags: list[str]
    launches: dict[int, list[str]]


def sources(plan: Plan, s: Settings) -> CudaSources:
    """The regions' kernels (.cu, CUDA headers only) and torch wrappers (C++ unit)."""
    srcs, wrappers, names, launches = [HEADER], [CPP_HEADER], [], {}
    stream = "torch.cuda.current_stream(out.device).cuda_stream"
    for region in plan.regions:
        names.append(f"region_{region.index}")
        if region.is_row:
            srcs.append(row_source(region, s))
            wrappers.append(row_wrapper(region))
            launches[region.index] = [f"_ext.region_{region.index}(*ts, out, outer, R, inner, {stream})"]
        else:
            srcs.append(ew_source(region, s))
            wrappers.append(ew_wrapper(region))
            launches[region.index] = [f"_ext.region_{region.index}(*ts, out, L, *bands, {stream})"]
    flags = FAST_CUDA_FLAGS if s[Knob.MATH] == "fast" else CUDA_FLAGS
    return CudaSources("\n".join(srcs), "\n".join(wrappers) + "\n", names, flags, launches)
