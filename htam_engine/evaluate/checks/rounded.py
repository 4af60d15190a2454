"""Products of rounded operands: a float32 output computed from operands rounded to fewer mantissa
bits (a float16 or TF32 tensor-core product, bfloat16), told apart by what it is close to.

The precision check (observe.check_precision) measures a candidate's distance to float64 against a
floor set above what another float32 algorithm costs (1e-4). On operands of one sign the rounding
errors of a long sum average out: a float16-operand product over K = 1024 terms of [0, 1) values is
~1e-5 off, under that floor, like an honest kernel with another summation order. The two differ in
what they are close to: the honest kernel is close to the float64 product of the operands it was
given, the rounded one to the product of those operands rounded (its own inputs, to float32
accumulation's ~1e-7). So where a candidate's distance to float64 is well above the reference's own,
the judge runs the reference again on rounded operands (every operand, then each input alone, then
the parameters alone: a kernel may round one side of a product), and a candidate ROUNDED_CLOSER times
closer to one of those than to float64 computed on rounded operands.

The rounded yardsticks are float32 runs of the reference itself (its own draws, for the call's seed):
their own error (~1e-7) is far below the rounding's (~1e-5) they are told apart by, and they cost a
reference call each, so every suspect output gets them, a checked set's or a picked timed trial's.

Inputs already representable in the narrower format (integers in floats, masks) round to themselves:
both yardsticks are then the same and nothing is found. Rounding inside a kernel (an intermediate
stored in float16, as a fused attention's probabilities) is not an operand's: no yardstick of these
models it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from htam_engine.evaluate.checks.compare import flatten, relative_error
from htam_engine.evaluate.checks.observe import Observations


@dataclass(frozen=True)
class Rounding:
    name: str
    mantissa_bits: int  # explicit bits kept of float32's 23


@dataclass(frozen=True)
class Operands:
    """Which operands a rounded yardstick rounds: float32 inputs by position, and the model's float32
    parameters and buffers."""

    inputs: frozenset[int]
    parameters: bool

    def describe(self, every: bool) -> str:
        if every:
            return "every operand"
        if self.inputs:
            return f"input #{min(self.inputs)}"
        return "the parameters"


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


def operand_sets(inputs: list[Any], has_parameters: bool) -> list[Operands]:
    """Every operand first; then, where there are several, each float32 input alone and the
    parameters alone."""
    positions = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.dtype == torch.float32]
    if not positions and not has_parameters:
        return []
    sets = [Operands(frozenset(positions), has_parameters)]
    if len(positions) + has_parameters > 1:
        sets += [Operands(frozenset([i]), False) for i in positions]
        sets += [Operands(frozenset(), True)] if has_parameters else []
    return sets


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


@dataclass(frozen=True)
class Closest:
    path: str
    rounding: Rounding
    operands: str  # Operands.describe
    e_new: float  # distance to float64
    d: float  # distance to the rounded yardstick


def _yardsticks(sets: list[Operands],
                rounded: Callable[[Rounding, Operands], Any]) -> Iterator[tuple[Rounding, str, Any]]:
    for rounding in ROUNDINGS:
        for k, operands in enumerate(sets):
            yield rounding, operands.describe(every=k == 0), rounded(rounding, operands)


def closest_rounding(out: Any, suspects: list[tuple[str, float]], sets: list[Operands],
                     rounded: Callable[[Rounding, Operands], Any]) -> Closest | None:
    """The first suspect leaf ROUNDED_CLOSER times closer to the reference run on rounded operands than
    to float64. `rounded(rounding, operands)`: that run's output (None where it cannot be run); each
    is freed before the next is run."""
    values = {leaf.path: leaf.value for leaf in flatten(out)}
    for rounding, described, yardstick in _yardsticks(sets, rounded):
        if yardstick is None:
            continue
        at = {leaf.path: leaf.value for leaf in flatten(yardstick)}
        for path, e_new in suspects:
            y = at.get(path)
            d = relative_error(values[path], y) if isinstance(y, torch.Tensor) else None
            if d is not None and d * ROUNDED_CLOSER <= e_new:
                return Closest(path, rounding, described, e_new, d)
        del yardstick, at
    return None


def check_rounded_operands(out: Any, ref_out: Any, exact: Any, sets: list[Operands],
                           rounded: Callable[[Rounding, Operands], Any], label: str, obs: Observations) -> None:
    """A `lower_precision` finding where the output is the reference's on rounded operands (the
    module's docstring); the rounded runs are made only for a suspect output."""
    suspects = suspect_leaves(out, ref_out, exact)
    if not suspects or not sets:
        return
    found = closest_rounding(out, suspects, sets, rounded)
    if found is not None:
        where = f"output{found.path}" if found.path else "output"
        name = found.rounding.name
        obs.find("lower_precision", f"{where} on {label}: relative error {found.e_new:.2e} against a float64 "
                                    f"reference but {found.d:.2e} against the reference run with {found.operands} "
                                    f"rounded to {name}: computed from {name} operands, not float32", "incorrect")
