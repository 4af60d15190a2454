"""Products of rounded operands: a float32 output computed from operands rounded to fewer mantissa
bits (a float16 or TF32 tensor-core product, bfloat16), told apart by what it is close to.

The precision check (observe.check_precision) measures a candidate's distance to float64 against a
floor set above what another float32 algorithm costs (1e-4). On operands of one sign the rounding
errors of a long sum average out: a float16-operand product over K = 1024 terms of [0, 1) values is
~1e-5 off, under that floor, like an honest kernel with another summation order. The two differ in
what they are close to: the honest kernel's error is its own, the rounded one's is the rounding's, the
same element by element as the reference's run on the rounded operands (to float32 accumulation's
~1e-7). So where a candidate's output is more than SUSPECT_RATIO times farther from float64 than the
reference's, the judge runs the reference again on rounded operands (every operand, then each input
alone, then the parameters alone: a kernel may round one side of a product), and the candidate is
`lower_precision` where, for one of those runs:

- the rounding moved the reference's output (MIN_MOVE, and ROUNDED_CLOSER times more than the
  candidate is from the run): where the output does not depend on the bits rounded off, the run is the
  reference's own algorithm and a candidate equal to it proves nothing;
- and the candidate's error pattern is the run's to within 1 / ROUNDED_CLOSER, once each error's part
  along the output itself (a uniform relative offset; all of a scalar's error) is taken away: one
  number, or a bias every element shares, is no pattern (an honest mean of squares on an H100 was
  3.2e-6 from float64 and 3.6e-7 from the bfloat16 run).

The rounded runs are float32 runs of the reference itself (its own draws, for the call's seed) and cost
a reference call each, so every suspect output gets them, a checked set's or a picked timed trial's.
Rounding inside a kernel (an intermediate stored in float16, as a fused attention's probabilities) is
not an operand's: no run of these models it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from htam_engine.evaluate.checks.compare import flatten, real_parts, relative_error, runs
from htam_engine.evaluate.checks.observe import Observations, Precision

if TYPE_CHECKING:  # reference.py imports this module's roundings
    from htam_engine.evaluate.reference import ReferenceModel


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
# A candidate whose error pattern is a rounded run's to within 1 / ROUNDED_CLOSER of its size rounded.
ROUNDED_CLOSER = 4.0
# Outputs of fewer elements have too few for a pattern (a scalar's error is all along itself).
MIN_ELEMENTS = 64
# The least relative move of the reference's output that rounding its operands must make to be told from
# float32's own rounding (about 4 ulps' worth; the products this rule is for move by 1e-6 to 1e-5).
MIN_MOVE = 5e-7


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


def suspect_leaves(measured: list[Precision]) -> list[tuple[str, float]]:
    """The float32 output leaves (path, distance to float64) more than SUSPECT_RATIO times farther
    from float64 than the reference's, of check_precision's figures (no pass over the outputs here)."""
    return [(p.path, p.candidate) for p in measured
            if p.dtype == torch.float32 and p.candidate > SUSPECT_RATIO * p.reference]


@dataclass(frozen=True)
class Closest:
    path: str
    rounding: Rounding
    operands: str  # Operands.describe
    e_new: float  # distance to float64
    left: float  # the share of the candidate's error pattern the rounded run's does not explain


def error_patterns(out: torch.Tensor, yardstick: torch.Tensor, exact: torch.Tensor) -> tuple[float, float] | None:
    """(||r_out||, ||r_out - r_y||) where r is an output's error against float64 less its part along
    the exact output itself (a uniform relative offset: a long sum's accumulation bias, the bias rounding
    adds to a sum of squares, and all of a one-element output's error). What is left of an honest
    kernel's error is its own and unrelated to the rounding's; a product of rounded operands leaves the
    rounding's pattern. Finite positions of all three only; None where undefined. Two passes in runs."""
    if not (out.shape == yardstick.shape == exact.shape) or exact.numel() < MIN_ELEMENTS:
        return None

    def parts() -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        for _, (o, y, e) in runs(real_parts(out), real_parts(yardstick), real_parts(exact)):
            o, y, e = o.double(), y.double(), e.double()
            keep = torch.isfinite(o) & torch.isfinite(y) & torch.isfinite(e)
            e = torch.where(keep, e, 0.0)
            yield torch.where(keep, o - e, 0.0), torch.where(keep, y - e, 0.0), e

    along = torch.zeros(3, dtype=torch.float64)
    for eo, ey, e in parts():
        along += torch.stack([(eo * e).sum(), (ey * e).sum(), (e * e).sum()]).cpu()
    if along[2] == 0:
        return None
    mu_out, mu_y = float(along[0] / along[2]), float(along[1] / along[2])
    sums = torch.zeros(2, dtype=torch.float64)
    for eo, ey, e in parts():
        r_out = eo - mu_out * e
        sums += torch.stack([(r_out * r_out).sum(), ((r_out - (ey - mu_y * e)) ** 2).sum()]).cpu()
    return math.sqrt(float(sums[0])), math.sqrt(float(sums[1]))


def _yardsticks(sets: list[Operands],
                rounded: Callable[[Rounding, Operands], Any]) -> Iterator[tuple[Rounding, str, Any]]:
    for rounding in ROUNDINGS:
        for k, operands in enumerate(sets):
            yield rounding, operands.describe(every=k == 0), rounded(rounding, operands)


def _moved(out: torch.Tensor, yardstick: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether rounding the operands moved the reference's output (the rounded run against the run on
    the operands as given, one algorithm on both) by MIN_MOVE at least and ROUNDED_CLOSER times more
    than the candidate is from the rounded run. Where it did not (the output does not depend on the bits
    rounded off), a candidate equal to the rounded run is equal to the reference's algorithm, no more."""
    moved = relative_error(yardstick, ref)
    d = relative_error(out, yardstick)
    return moved is not None and d is not None and moved >= MIN_MOVE and d * ROUNDED_CLOSER <= moved


def closest_rounding(out: Any, ref_out: Any, exact: Any, suspects: list[tuple[str, float]], sets: list[Operands],
                     rounded: Callable[[Rounding, Operands], Any]) -> Closest | None:
    """The first suspect leaf that a rounded run moved away from the reference (_moved) and whose error
    pattern (error_patterns) is that run's to within 1 / ROUNDED_CLOSER. `rounded(rounding, operands)`:
    that run's output (None where it cannot be run); each is freed before the next is run."""
    leaves = [{leaf.path: leaf.value for leaf in flatten(t)} for t in (out, ref_out, exact)]
    for rounding, described, yardstick in _yardsticks(sets, rounded):
        if yardstick is None:
            continue
        at = {leaf.path: leaf.value for leaf in flatten(yardstick)}
        for path, e_new in suspects:
            y = at.get(path)
            o, r, e = (d.get(path) for d in leaves)
            if not all(isinstance(t, torch.Tensor) for t in (y, o, r, e)) or not _moved(o, y, r):
                continue
            norms = error_patterns(o, y, e)
            if norms is not None and norms[0] > 0 and norms[1] * ROUNDED_CLOSER <= norms[0]:
                return Closest(path, rounding, described, e_new, norms[1] / norms[0])
        del yardstick, at
    return None


def check_rounded_operands(out: Any, ref_out: Any, exact: Any, measured: list[Precision], reference: ReferenceModel,
                           inputs: list[Any], seed: int, label: str, obs: Observations) -> None:
    """A `lower_precision` finding where the output is the reference's on rounded operands (the
    module's docstring). measured: check_precision's figures for this output; inputs and seed: the
    call's, as the reference got them. Nothing else is read or run for an output that raises no
    suspicion, or where lower precision was already found."""
    suspects = suspect_leaves(measured)
    if not suspects or obs.has("lower_precision"):
        return
    sets = operand_sets(inputs, reference.has_parameters)
    if not sets:
        return
    found = closest_rounding(out, ref_out, exact, suspects, sets, functools.partial(reference.rounded, inputs, seed))
    if found is not None:
        where = f"output{found.path}" if found.path else "output"
        name = found.rounding.name
        obs.find("lower_precision", f"{where} on {label}: relative error {found.e_new:.2e} against a float64 "
                                    f"reference, {found.left:.0%} of whose pattern is left after taking away the "
                                    f"error of the reference run with {found.operands} rounded to {name}: computed "
                                    f"from {name} operands, not float32", "incorrect")
