"""A plan's design space on a backend: the knobs of the generators its regions use.

Each backend's generator module declares, per region kind, the knobs it reads with their
domains and shape-aware defaults (triton_gen.ew_space, cuda.row_space, ...); a plan's space
is their union (a knob two regions share takes the first region's default).
"""

from __future__ import annotations

from htam_engine.families import Backend
from htam_engine.propose.offline import cpp, cuda, triton_gen
from htam_engine.propose.offline.decompose import Unsupported
from htam_engine.propose.offline.ir import TRIANGLE
from htam_engine.propose.offline.lower import ALL_LAYOUTS, Plan
from htam_engine.propose.offline.triton_gemm import gemm_space
from htam_engine.propose.offline.triton_scan import scan_space
from htam_engine.propose.offline.triton_window import window_space
from htam_engine.propose.offline.space import Knob, KnobSpec, Space

_GENERATORS = {
    Backend.TRITON: (triton_gen.ew_space, triton_gen.row_space),
    Backend.CUDA: (cuda.ew_space, cuda.row_space),
    Backend.CPP: (cpp.ew_space, cpp.row_space),
}
# Region layouts each backend's generators write; ops needing another stay library calls there.
LAYOUTS = {Backend.TRITON: ALL_LAYOUTS, Backend.CUDA: frozenset(), Backend.CPP: frozenset()}
MATH = KnobSpec(Knob.MATH, ("exact", "fast"), "exact", "exact or approximate transcendental functions")
# On the H200 cuDNN's float32 convolutions of KernelBench's level 2 ran 1.3-1.7x faster on a
# channels-last input (tests/bench/gpu_probe_conv.py), as torch.compile runs them. Both layouts
# are TF32 by default, and where both are, their results agree (2/1: none of 260 M elements outside
# 1e-4). But cuDNN runs a short sum (8 input channels x 3 x 3) in float32 in NCHW and in TF32
# channels-last, so there 15 % of 2/57's elements were outside 1e-4 of the problem's own
# convolution. Measured on 12 problems with an elementwise tail (gpu_probe_variants.py --preset
# conv): every one with at least 216 products per output was correct and 1.01-1.28x faster
# channels-last, every one with 72 incorrect. So channels-last is the default from 128 products
# per output on; the moves channels_last and conv_nchw flip it, and the checks decide. It is a
# prior, not a guarantee: in the whole level 1+2 table (tests/bench/data/kb_table_h200.md) 3 of the
# 19 channels-last defaults failed the checks (2/27 with 192 products, 2/90 216, 2/31 576), and
# safe_kernel's NCHW repaired each at the next step.
CHANNELS_LAST_FROM = 128
CONV_LAYOUTS = ("nchw", "channels_last")


def conv_layout_spec(plan: Plan) -> KnobSpec:
    long_sums = all(c.reduction >= CHANNELS_LAST_FROM for c in plan.channels_last_convs())
    return KnobSpec(Knob.CONV_LAYOUT, CONV_LAYOUTS, "channels_last" if long_sums else "nchw",
                    "the kept convolution's layout, its elementwise tail reading it in place")


def plan_space(plan: Plan, backend: Backend) -> Space:
    """Raises Unsupported when no generator of this backend writes a kernel for the plan."""
    backend = Backend(backend)
    ew_space, row_space = _GENERATORS[backend]
    space = Space()
    if plan.gemms and not plan.regions and backend is not Backend.TRITON:
        raise Unsupported(f"a bare matrix product: the {backend.value} backend has no GEMM generator (use triton)")
    triangles = {r.index for r in plan.regions if any(e.op in TRIANGLE for e in r.exprs)}
    epilogues = {g.epilogue for g in plan.gemms}
    if triangles - epilogues or (triangles and backend is not Backend.TRITON):
        raise Unsupported("triu/tril outside a matrix product's epilogue (only a Triton GEMM computes it)")
    if backend is Backend.TRITON:
        for g in plan.gemms:
            # the library's product is a candidate only when kernels of ours do the rest of the work,
            # and the epilogue is one the elementwise kernels can write
            library_ok = bool(plan.regions) and g.epilogue not in triangles
            for spec in gemm_space(g, library_ok=library_ok):
                space.add(spec)
    for region in plan.regions:
        if region.kind == "window":
            if backend is not Backend.TRITON:
                raise Unsupported(f"pooling: the {backend.value} backend has no pooling generator (use triton)")
            specs = window_space(region)
        elif region.kind == "scan":
            if backend is not Backend.TRITON:
                raise Unsupported(f"a cumulative scan: the {backend.value} backend has no scan generator (use triton)")
            if region.scan.op == "prod" and region.scan.exclusive:
                raise Unsupported("an exclusive cumulative product")
            specs = scan_space(region)
        elif region.index_output and backend is not Backend.TRITON:
            raise Unsupported(f"argmax/argmin: the {backend.value} backend has no index reduction (use triton)")
        elif any(e.op == "pos" for e in region.exprs) and backend is not Backend.TRITON:
            raise Unsupported(f"a gather by class index (cross-entropy): the {backend.value} backend has no "
                              f"generator for it (use triton)")
        else:
            specs = row_space(region) if region.is_row else ew_space(region)
        for spec in specs:
            space.add(spec)
    if backend is Backend.TRITON and plan.channels_last_reads():
        space.add(conv_layout_spec(plan))
    space.add(MATH)
    return space
