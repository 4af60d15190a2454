"""Template ids the HTG's local strategies point at, and what each changes in the code.

A template fixes how elementwise regions and row regions are generated (one
element per iteration, 4-wide vectors, a grid-stride loop, fast math; block,
warp, online or vectorised rows). The proposer picks the first template among
the retrieved strategies (in rank order) that fits the problem's plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from htam_engine.families import Backend, Family
from htam_engine.propose.offline.ir import Region
from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.schedule import build_schedule


@dataclass(frozen=True, slots=True)
class Variant:
    ew: str = "scalar"  # scalar | vec4 | stride
    row: str = "block"  # block | warp | online | vec4
    fast: bool = False  # approximate intrinsics (__expf, exp2, one-exp tanh)
    vexp: bool = False  # CPU: a vectorisable polynomial exp (libm's expf blocks vectorisation)


@dataclass(frozen=True, slots=True)
class Template:
    id: str
    targets: str  # "ew" | "row" | "epilogue": which part of a plan it changes
    variant: Variant
    summary: str


TEMPLATES: dict[str, Template] = {
    t.id: t
    for t in (
        Template("ew_fused_scalar", "ew", Variant("scalar", "block"),
                 "one fused pass over single elements (no vector types), a few per GPU thread"),
        Template("ew_fused_vec4", "ew", Variant("vec4", "block"),
                 "one fused pass with 4-wide vector loads and stores and a scalar tail"),
        Template("ew_grid_stride", "ew", Variant("stride", "block"),
                 "persistent workers walking the tensor in a grid-stride loop"),
        Template("ew_fast_math", "ew", Variant("scalar", "block", fast=True),
                 "fast intrinsics (__expf, exp2, one-exp tanh/sigmoid) in the fused pass"),
        Template("row_reduce_block", "row", Variant("scalar", "block", vexp=True),
                 "a block (program / task) per row, tree reduction in shared memory, one pass per reduction level"),
        Template("row_reduce_warp", "row", Variant("scalar", "warp", vexp=True),
                 "a warp per row with shuffle reductions"),
        Template("row_reduce_online", "row", Variant("scalar", "online", vexp=True),
                 "single-pass online softmax / Welford statistics"),
        Template("row_reduce_vec4", "row", Variant("vec4", "vec4", vexp=True),
                 "row reductions with 4-wide loads and 4 independent accumulators"),
        Template("epilogue_fused", "epilogue", Variant("scalar", "block", vexp=True),
                 "library op kept in PyTorch, the whole tail fused into one kernel"),
        Template("epilogue_vec4", "epilogue", Variant("vec4", "vec4", vexp=True),
                 "library op kept in PyTorch, the tail fused with 4-wide vector access"),
    )
}
TEMPLATE_IDS: tuple[str, ...] = tuple(TEMPLATES)

_FAMILIES = {
    "ew": {Family.ELEMENTWISE, Family.FUSED_CHAIN},
    "row": {Family.REDUCTION, Family.NORMALIZATION, Family.FUSED_CHAIN},
    "epilogue": {Family.MATMUL, Family.CONVOLUTION, Family.FUSED_CHAIN},
}
_OPEN_FAMILIES = {Family.WHOLE_MODEL, Family.OTHER}

FAMILY_DEFAULT = {
    Family.ELEMENTWISE: "ew_fused_scalar",
    Family.REDUCTION: "row_reduce_block",
    Family.NORMALIZATION: "row_reduce_block",
    Family.MATMUL: "epilogue_fused",
    Family.CONVOLUTION: "epilogue_fused",
}


def supports(template_id: str, backend: Backend | str, family: Family | str) -> bool:
    """Whether the template exists for this backend and can apply to problems of this family."""
    t = TEMPLATES.get(template_id)
    if t is None:
        return False
    backend, family = Backend(backend), Family(family)
    if backend is Backend.CPP and t.variant.row == "warp":
        return False  # a CPU has no warps
    return family in _FAMILIES[t.targets] or family in _OPEN_FAMILIES


def _online_fits(region: Region) -> bool:
    return build_schedule(region, online=True).merged


def applies(template_id: str, plan: Plan) -> bool:
    """Whether the template changes something in this plan's code."""
    t = TEMPLATES[template_id]
    ew = [r for r in plan.regions if not r.is_row]
    rows = [r for r in plan.regions if r.is_row]
    if t.targets == "epilogue":
        return plan.has_library_op
    if t.targets == "ew":
        return bool(ew)
    if t.variant.row == "online":
        return any(_online_fits(r) for r in rows)
    return bool(rows)


def default_template(plan: Plan, family: Family) -> str:
    fam = FAMILY_DEFAULT.get(family)
    if fam and applies(fam, plan):
        return fam
    if plan.has_library_op:
        return "epilogue_fused"
    if any(r.is_row for r in plan.regions):
        return "row_reduce_block"
    return "ew_fused_scalar"
