"""The Triton part of a candidate module: imports, shared helpers and every region's kernel."""

from __future__ import annotations

from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.space import Settings
from htam_engine.propose.offline.triton_gen import NUM_SMS, ew_kernel, row_kernel
from htam_engine.propose.offline.triton_scan import MUL, scan_kernel
from htam_engine.propose.offline.triton_window import window_kernel

_WRITERS = {"ew": ew_kernel, "row": row_kernel, "window": window_kernel, "scan": scan_kernel}


def kernels(plan: Plan, s: Settings) -> tuple[str, dict[int, list[str]]]:
    """(source text, launch lines of each region's wrapper)."""
    parts = ["import triton", "import triton.language as tl", NUM_SMS]
    if any(r.kind == "scan" and r.scan.op == "prod" for r in plan.regions):
        parts.append(MUL)
    launches: dict[int, list[str]] = {}
    for region in plan.regions:
        src, launch = _WRITERS[region.kind](region, s)
        parts.append("\n".join(src) + "\n")
        launches[region.index] = launch
    return "\n\n".join(parts), launches
