"""Products of rounded operands: a float32 output computed from operands rounded to fewer mantissa
bits (a float16 or TF32 tensor-core product, bfloat16), told apart by what it is close to.

The precision check (observe.check_precision) measures a candidate's distance to float64 against a
floor set above what another float32 algorithm costs (1e-4). On operands of one sign the rounding
errors of a long sum average out: a float16-operand product over K = 1024 terms of [0, 1) values is
~1e-5 off, under that floor, like an honest kernel with another summation order. The two differ in
what they are close to: the honest kernel is close to the float64 product of the operands it was
given, the rounded one to the float64 product of those operands rounded (its own inputs, to float32
accumulation's ~1e-7). So where a candidate's distance to float64 is well above the reference's own,
the judge computes the float64 reference again on rounded inputs and parameters, and a candidate
ROUNDED_CLOSER times closer to that than to the exact one computed on rounded operands.

Inputs already representable in the narrower format (integers in floats, masks) round to themselves:
both yardsticks are then the same and nothing is found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from htam_engine.evaluate.checks.compare import flatten, relative_error
from htam_engine.evaluate.checks.observe import Observations


@dataclass(frozen=True)
class Rounding:
    name: str
    mantissa_bits: int  # explicit bits kept of float32's 23


# float16 and TF32 keep 10 bits (float16's narrower exponent only matters outside [6e-5, 65504]);
# bfloat16 keeps 7.
ROUNDINGS = (Rounding("float16/TF32", 10), Rounding("bfloat16", 7))
# A candidate this many times farther from float64 than the reference is may have rounded its
# operands (an honest float32 kernel is within a few times the reference's own distance).
SUSPECT_RATIO = 4.0
# A candidate this many times closer to the rounded yardstick than to the exact one rounded.
ROUNDED_CLOSER = 4.0


def round_mantissa(t: torch.Tensor, bits: int) -> torch.Tensor:
    """A float32 tensor rounded (to nearest, ties to even) to `bits` explicit mantissa bits, as a
    new float32 tensor; infinities and NaNs are kept."""
    shift = 23 - bits
    i = t.contiguous().view(torch.int32)
    odd = (i >> shift) & 1
    r = ((i + ((1 << (shift - 1)) - 1) + odd) >> shift) << shift
    out = r.view(torch.float32)
    return torch.where(torch.isfinite(t), out, t)


def suspect_leaves(out: Any, ref_out: Any, exact: Any) -> list[tuple[str, float]]:
    """The float32 output leaves (path, distance to float64) whose distance to float64 is more than
    SUSPECT_RATIO times the reference's own."""
    exact_leaves = {leaf.path: leaf.value for leaf in flatten(exact)}
    ref_leaves = {leaf.path: leaf.value for leaf in flatten(ref_out)}
    found = []
    for leaf in flatten(out):
        n, r, e = leaf.value, ref_leaves.get(leaf.path), exact_leaves.get(leaf.path)
        if not all(isinstance(x, torch.Tensor) for x in (n, r, e)) or n.dtype != torch.float32 or r.dtype != n.dtype:
            continue
        e_new, e_ref = relative_error(n, e), relative_error(r, e)
        if e_new is not None and e_ref is not None and e_new > 0 and e_new > SUSPECT_RATIO * e_ref:
            found.append((leaf.path, e_new))
    return found


def closest_rounding(out: Any, suspects: list[tuple[str, float]],
                     rounded: Callable[[Rounding], Any]) -> tuple[str, Rounding, float, float] | None:
    """The first (leaf path, rounding, distance to float64, distance to the rounded yardstick) where a
    suspect leaf is ROUNDED_CLOSER times closer to the reference computed on rounded operands than
    to float64. `rounded(rounding)`: that yardstick's output (None where it cannot be computed)."""
    values = {leaf.path: leaf.value for leaf in flatten(out)}
    for rounding in ROUNDINGS:
        yardstick = rounded(rounding)
        if yardstick is None:
            continue
        at = {leaf.path: leaf.value for leaf in flatten(yardstick)}
        for path, e_new in suspects:
            y = at.get(path)
            if not isinstance(y, torch.Tensor):
                continue
            d = relative_error(values[path], y)
            if d is not None and d * ROUNDED_CLOSER <= e_new:
                return path, rounding, e_new, d
    return None


def check_rounded_operands(out: Any, ref_out: Any, exact: Any, rounded: Callable[[Rounding], Any], label: str,
                           obs: Observations) -> bool:
    """A `lower_precision` finding where the output is a product of rounded operands (the module's
    docstring). Returns whether the rounded yardsticks were computed (a suspect leaf): the caller
    asks once per evaluation, on the first set that raises the suspicion."""
    suspects = suspect_leaves(out, ref_out, exact)
    if not suspects:
        return False
    found = closest_rounding(out, suspects, rounded)
    if found is not None:
        path, rounding, e_new, d = found
        where = f"output{path}" if path else "output"
        obs.find("lower_precision", f"{where} on {label}: relative error {e_new:.2e} against a float64 reference "
                                    f"but {d:.2e} against the same computed on operands rounded to {rounding.name}: "
                                    f"computed from {rounding.name} operands, not float32", "incorrect")
    return True
