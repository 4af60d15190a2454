"""A plan's design space on a backend: the knobs of the generators its regions use.

Each backend's generator module declares, per region kind, the knobs it reads with their
domains and shape-aware defaults (triton_gen.ew_space, cuda.row_space, ...); a plan's space
is their union (a knob two regions share takes the first region's default).
"""

from __future__ import annotations

from htam_engine.families import Backend
from htam_engine.propose.offline import cpp, cuda, triton_gen
from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.space import Knob, KnobSpec, Space

_GENERATORS = {
    Backend.TRITON: (triton_gen.ew_space, triton_gen.row_space),
    Backend.CUDA: (cuda.ew_space, cuda.row_space),
    Backend.CPP: (cpp.ew_space, cpp.row_space),
}
MATH = KnobSpec(Knob.MATH, ("exact", "fast"), "exact", "exact or approximate transcendental functions")


def plan_space(plan: Plan, backend: Backend) -> Space:
    ew_space, row_space = _GENERATORS[Backend(backend)]
    space = Space()
    for region in plan.regions:
        for spec in (row_space(region) if region.is_row else ew_space(region)):
            space.add(spec)
    space.add(MATH)
    return space
