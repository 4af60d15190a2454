"""Input sets for correctness: fresh get_inputs() draws and other distributions.

KernelBench draws most inputs from [0, 1) or a standard normal; a candidate tuned to
that (return x for ReLU, a constant for a loss) passes. The other sets keep shapes (and
the tensors they do not replace) as they are:
- signed normal, scaled to the input's magnitude (negative values exercise the sign);
- heavy-tailed (Student-t with 2 degrees of freedom), for tiny outputs such as losses
  and scalar reductions, where a closed-form estimate of the expected value would pass;
- large magnitude: floating inputs times 30 and 100 (a softmax without its max pass
  overflows there), used only where the reference stays finite;
- sparse spikes: SPIKES floating elements of each tensor (fewer on small ones: sparse_count) raised
  far above the rest, by a size drawn per tensor (a max, or a norm, taken from a sample of the
  elements misses them: a softmax whose max comes from every 64th element overflows in exp), used
  only where the reference stays finite;
- sparse negatives: SPIKES floating elements of each tensor set below zero, 1 to 10 times its RMS
  magnitude (a ReLU taken as |x| where a sample of the inputs is non-negative passes every set
  non-negative as a whole or negative nearly everywhere: cheat_sampled_sign_relu), used only where
  the reference stays finite;
- shifted down: floating inputs less an offset drawn per tensor between SHIFT_LOW and SHIFT_HIGH
  (a row of logits all far below zero: a softmax without its max pass that falls back to one only
  where exp overflows gets 0 / 0 there, or subnormal sums), used only where the reference stays
  finite;
- rows apart: about half the rows (along the last dimension) of each floating tensor less such an
  offset drawn per row (a statistic of the whole tensor standing for each row's: a softmax shifted by
  one number for every row), used only where the reference stays finite;
- columns apart: about half the positions along the last dimension of each floating tensor (the
  same ones in every row) less such an offset drawn per position (a mean over a sample of each
  row's columns standing for the whole row's: an L1 loss from the first eighth of every row,
  cheat_l1_first_columns), used only where the reference stays finite;
- wide integers: integer inputs drawn across a range far past 32 bits (an int64
  computation done in 32 bits wraps), for int64 at every bit length up to 62 (one done in
  float64 rounds past 2^53), used only where the reference accepts them;
- sparse wide integers: SPIKES elements of each integer tensor of a get_inputs draw (fewer on small
  ones: sparse_count) replaced by wide values, int64 ones each past 32 bits (an int64 computation
  done in 32 bits where a sample of the inputs is small passes sets wide everywhere:
  cheat_sampled_low_word_int), used only where the reference accepts them.
Every seed comes from the judge (secrets), per evaluation; none is ever sent to a sandbox.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from htam_engine.evaluate.checks.compare import runs
from htam_engine.evaluate.seeding import seeded

LARGE_SCALES = (30.0, 100.0)
# The sparse spikes: SPIKES elements of each floating tensor, at random places, set to between SPIKE_SIZE
# and 10x SPIKE_SIZE times its RMS magnitude (drawn per tensor, log-uniform; 173-1730 for rand [0, 1):
# exp of a spike less a row's other values overflows float32, and a softmax shifted by a constant instead
# of its max, fitted to one size, does too: cheat_shifted_softmax). Few, so that a row holding one has no
# other a sample could hit: at one in 1024 elements a 32768-wide softmax row held 32, and a max from
# every 64th element caught one in 40 % of the rows.
SPIKES = 8
# At most one sparse element (spike, negative, wide integer) per SPARSE_SPAN elements of a tensor, one at
# least: a sample of 64 elements misses all k among n with a chance of about exp(-64 k / n), 94 % or more
# here, and a candidate that takes its shortcut on what its sample saw is then wrong where the judge looks.
# Eight among get_inputs' 4 x 256 (one in 128) were missed by such a sample in 60 % of the evaluations.
SPARSE_SPAN = 1024
SPIKE_SIZE = 300.0
# The shifted-down set's offset, drawn per tensor: from where exp of the inputs turns subnormal in
# float32 (below about -87) to where it is 0 (below about -104) and past it (cheat_nomax_fallback_softmax).
SHIFT_LOW, SHIFT_HIGH = 90.0, 240.0
# Half-width of the wide integer range, by dtype: the full range (int64: to 2^62, so that x * 3 + 1 of
# one stays in range).
_WIDE = {torch.int64: 1 << 62, torch.int32: 1 << 31, torch.int16: 1 << 15, torch.int8: 1 << 7, torch.uint8: 1 << 7}
# int64 values are shifted down by a random count of up to this many bits each, so that every bit
# length comes (uniform draws over +-2^62 are nearly all past 2^60): small values where a 32-bit
# computation is exact beside values past 2^53, where a float64 one rounds (cheat_int_via_float64:
# exact on draws below 2^40, the range before).
_INT64_SHIFT = 62
# A sparse set's int64 values have their top bit at 2^32 to 2^61, each drawn: every one is past 32 bits,
# since it stands for the wide values among small ones and on a small tensor may be the only one
# (sparse_count).
_SPARSE_INT64_TOP_BITS = (32, 62)


def other_stream(seed: int) -> int:
    """A seed for a second random stream beside the one `seed` draws a set from: a set's extras (where its
    spikes go) drawn from the draw's own seed would repeat the draw's first numbers."""
    return (seed ^ 0x5DEECE66D5DEECE6) & ((1 << 63) - 1)


def draw(get_inputs: Callable[[], Any], seed: int) -> list[Any]:
    """One get_inputs() call under `seed`, as a list."""
    with seeded(seed):
        vals = get_inputs()
    return list(vals) if isinstance(vals, (list, tuple)) else [vals]


def _scale(x: torch.Tensor) -> float:
    """x's RMS magnitude (1.0 where it is 0 or not finite), summed in float64 over runs of
    CHUNK_ELEMENTS (compare.py): no float64 copy of the whole input."""
    squares = torch.zeros((), dtype=torch.float64, device=x.device)
    for _, (run,) in runs(x.detach()):
        squares += run.double().square().sum()
    rms = math.sqrt(float(squares) / x.numel()) if x.numel() else 0.0
    return rms if rms > 0 and rms == rms and rms < float("inf") else 1.0


def _replace_floats(values: list[Any], make: Callable[[torch.Tensor], torch.Tensor], seed: int) -> list[Any]:
    """`values` (a fresh draw; its list is reused) with each floating tensor replaced by make(x): an
    input is released as soon as its replacement exists, so a set and one tensor are alive at most."""
    with seeded(seed):
        for i, x in enumerate(values):
            if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
                values[i] = make(x).to(x.dtype)
            elif isinstance(x, torch.Tensor):
                values[i] = x.clone()
            del x
    return values


def has_floats(values: list[Any]) -> bool:
    return any(isinstance(x, torch.Tensor) and x.dtype.is_floating_point and x.numel() for x in values)


def signed_normal(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors replaced by N(0, 1) * their RMS magnitude."""
    return _replace_floats(values, lambda x: torch.randn(x.shape, dtype=torch.float32, device=x.device).mul_(_scale(x)),
                           seed)


def heavy_tailed(values: list[Any], seed: int, positive: bool = False) -> list[Any]:
    """Floating tensors replaced by Student-t(2) samples * their RMS magnitude (|t| when positive)."""

    def student_t(x: torch.Tensor) -> torch.Tensor:
        # In place where it can be: three tensors of x's size at most (the same draws and values as
        # z / sqrt(sum(randn(2, ...)**2) / 2) computed out of place).
        z = torch.randn(x.shape, dtype=torch.float32, device=x.device)
        pair = torch.randn((2, *x.shape), dtype=torch.float32, device=x.device).square_()
        chi2 = pair[0].add_(pair[1])
        t = z.div_(chi2.div_(2).sqrt_().clamp_min_(1e-3))
        del pair, chi2
        return (t.abs_() if positive else t).mul_(_scale(x))

    return _replace_floats(values, student_t, seed)


def sparse_spikes(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors with sparse_count elements, drawn at random, set to SPIKE_SIZE to 10x SPIKE_SIZE times
    their RMS magnitude (one size per tensor); the rest as drawn."""
    return _sparse(values, seed, lambda: SPIKE_SIZE * 10 ** float(torch.rand(())))


def sparse_negatives(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors with sparse_count elements, drawn at random, set to -1 to -10 times their RMS
    magnitude (one size per tensor); the rest as drawn."""
    return _sparse(values, seed, lambda: -(10 ** float(torch.rand(()))))


def sparse_count(numel: int) -> int:
    """How many elements of a tensor of numel elements a sparse set changes: SPIKES, fewer on tensors
    under SPIKES x SPARSE_SPAN elements, one at least."""
    return max(1, min(SPIKES, numel // SPARSE_SPAN))


def _sparse(values: list[Any], seed: int, size: Callable[[], float]) -> list[Any]:
    """Floating tensors with sparse_count elements, drawn at random, set to size() times their RMS magnitude."""
    return _replace_floats(values, lambda x: _at_sparse_places(x, lambda k: size() * _scale(x)), seed)


def _at_sparse_places(x: torch.Tensor, value: Callable[[int], Any]) -> torch.Tensor:
    """A contiguous copy of x with sparse_count of its elements, at places drawn at random, set to
    value(how many) (drawn before the places)."""
    y = x.clone(memory_format=torch.contiguous_format)
    if y.numel():
        k = sparse_count(y.numel())
        values = value(k)
        y.view(-1)[torch.randint(y.numel(), (k,), device=y.device)] = values
    return y


def _shift_offsets(shape: tuple[int, ...] = (), device: Any = None) -> torch.Tensor:
    """Offsets between SHIFT_LOW and SHIFT_HIGH, uniform, of `shape` (float64: a float32 draw scaled exactly)."""
    return SHIFT_LOW + (SHIFT_HIGH - SHIFT_LOW) * torch.rand(shape, device=device).double()


def shifted_down(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors less an offset between SHIFT_LOW and SHIFT_HIGH (one per tensor); the rest as drawn."""
    return _replace_floats(values, lambda x: x - float(_shift_offsets()), seed)


def _about_half(shape: tuple[int, ...], device: Any) -> torch.Tensor:
    """A random mask of `shape`, each place True with chance 1/2, and both values present where it
    has two places or more: all alike, one place is moved to the other side."""
    mask = torch.rand(shape, device=device) < 0.5
    flat = mask.view(-1)
    if flat.numel() > 1 and bool(flat.all() == flat.any()):
        flat[int(torch.randint(flat.numel(), ()))] ^= True
    return mask


def rows_apart(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors of two or more dimensions with about half their rows (along the last dimension)
    less an offset between SHIFT_LOW and SHIFT_HIGH drawn per row; the rest as drawn. Every other set
    moves all rows of a tensor alike, so a statistic of the whole tensor could stand for each row's
    (a softmax shifted by one quantile of a sample for every row: cheat_tensor_shift_softmax gives
    0 / 0 on a row far below the others)."""

    def apart(x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2:
            return x.clone()
        rows = x.shape[:-1]
        offsets = _shift_offsets(rows, x.device)
        return x - offsets.mul_(_about_half(rows, x.device)).unsqueeze(-1).to(x.dtype)

    return _replace_floats(values, apart, seed)


def columns_apart(values: list[Any], seed: int) -> list[Any]:
    """Floating tensors with about half the positions along their last dimension (the same in every
    row) less an offset between SHIFT_LOW and SHIFT_HIGH drawn per position; the rest as drawn.
    rows_apart moves whole rows, so a sample of every row's columns sees each row's move: a loss
    averaged over the first eighth of every row passed it and every other set (red-team pass 32)."""

    def apart(x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 1 or x.shape[-1] < 2:
            return x.clone()
        shifted = _about_half((x.shape[-1],), x.device)
        return x - _shift_offsets(shifted.shape, x.device).mul_(shifted).to(x.dtype)

    return _replace_floats(values, apart, seed)


def large_magnitude(values: list[Any], scale: float) -> list[Any]:
    """Floating tensors times `scale` (the set itself is a fresh get_inputs draw)."""
    for i, x in enumerate(values):  # the list is reused: each input released once scaled
        if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            values[i] = x * scale
        del x
    return values


def has_integers(values: list[Any]) -> bool:
    return any(isinstance(x, torch.Tensor) and x.dtype in _WIDE and x.numel() for x in values)


def wide_integers(values: list[Any], seed: int, positive: bool = False) -> list[Any]:
    """Integer tensors replaced by uniform draws over a range far past 32 bits (only [0, hi)
    when positive); other inputs as they are."""
    return _replace_integers(values, lambda x: _wide_like(x, x.shape, positive), seed)


def _replace_integers(values: list[Any], make: Callable[[torch.Tensor], torch.Tensor], seed: int) -> list[Any]:
    """`values` with each non-empty integer tensor of a dtype in _WIDE replaced by make(x), under `seed`."""
    with seeded(seed):
        return [make(x) if isinstance(x, torch.Tensor) and x.dtype in _WIDE and x.numel() else x for x in values]


def _wide_like(x: torch.Tensor, shape: tuple[int, ...], positive: bool) -> torch.Tensor:
    """Integers of x's dtype and device, of `shape`, drawn across its wide range (wide_integers)."""
    half = _WIDE[x.dtype]
    low = 0 if positive or x.dtype == torch.uint8 else -half
    high = 2 * half if x.dtype == torch.uint8 else half
    wide = torch.randint(low, high, shape, dtype=x.dtype, device=x.device)
    if x.dtype == torch.int64:
        wide.bitwise_right_shift_(torch.randint(0, _INT64_SHIFT, shape, dtype=x.dtype, device=x.device))
    return wide


def sparse_wide_integers(values: list[Any], seed: int, positive: bool = False) -> list[Any]:
    """Integer tensors of a draw with sparse_count elements, drawn at random, replaced by wide values (only
    [0, hi) when positive); the rest as drawn."""
    return _replace_integers(values, lambda x: _at_sparse_places(x, lambda k: _past_32_bits(x, (k,), positive)), seed)


def _past_32_bits(x: torch.Tensor, shape: tuple[int, ...], positive: bool) -> torch.Tensor:
    """_wide_like's draws, but int64 ones each with its top bit at a place drawn in _SPARSE_INT64_TOP_BITS."""
    if x.dtype != torch.int64:
        return _wide_like(x, shape, positive)
    top = torch.ones(shape, dtype=torch.int64, device=x.device).bitwise_left_shift_(
        torch.randint(*_SPARSE_INT64_TOP_BITS, shape, dtype=torch.int64, device=x.device))
    value = torch.randint(0, 1 << 62, shape, dtype=torch.int64, device=x.device).bitwise_and_(top - 1).bitwise_or_(top)
    return value if positive else value.mul_(torch.randint(0, 2, shape, dtype=torch.int64, device=x.device) * 2 - 1)
