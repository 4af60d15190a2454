"""Output comparison: structure, shape, dtype, per-element tolerance, and a whole-output
relative bound that all-zeros or constant outputs cannot meet.

The per-element test is KernelBench's (|out - ref| <= atol + rtol*|ref|, atol = rtol =
the dtype's tolerance). It alone lets all-zeros pass softmax over a long row (every
probability is below atol), so the whole output must also satisfy
||out - ref|| <= tol * ||ref|| + floor, where floor is the reference's own numerical
noise (its distance to a float64 run) when the caller can supply it.

Where that noise is comparable to the reference's own norm, the reference is rounding
noise around a true output near zero (a mean of group-normalised values, ~1e-8): no
relative bound can mean anything there, all-zeros is as right as the reference, and the
per-element tolerances govern alone.

On the input sets htam draws beyond KernelBench's own (other distributions, large magnitudes,
an unseen shape) the caller may also pass the float64 yardstick's output: an element then also
passes when the candidate is within the tolerance plus NOISE_FACTOR times the reference's own
distance to float64 (there, or its root-mean-square over the output where that is larger: the
reference can be right at an element by luck) of the float64 value. A signed sum of many
products has outputs near zero that float32 gets wrong by ~1e-2 in any order of summation;
the reference is no closer to the truth there than an honest kernel, and KernelBench's
positive inputs never ask it. On those sets the relative tolerance is also taken of the
output's scale (the float64 output's root-mean-square), not only of each element's own value:
a sum of 4096 signed float32 values accumulated one after another (the offline proposer's
column kernel for KernelBench's 47_Sum_reduction) is 5e-4 off an output of 0.002 whose
neighbours are ~64 across, 1e-5 of the scale (on the H200: 2 of 524,160 outputs), while
bfloat16 rounding, a missing term or a wrong input is 1e-3 of the scale or more. There, too, a
millionth of the output's elements (none below a million) may be outside the per-element test, the
whole-output bound still holding: on the H100 an honest Triton GEMM + scale + BatchNorm
(KernelBench's 2/33, 1024 x 8192, a split-float32 GEMM) had 1 of 8,388,608 outputs outside on the
rows-apart set (rows shifted by -90 to -240 make the batch statistics huge and a few normalised
outputs the difference of near-equal numbers), where KernelBench's own check passes it; an
algorithm wrong on such a set (a softmax without its max pass) is wrong on whole rows.

Every comparison reads its tensors in runs of at most CHUNK_ELEMENTS elements and keeps
per-run figures (counts, maxima, norms, the worst index), so its float64 temporaries stay
bounded by the run whatever the output's size (KernelBench's 19_ReLU returns 6 GiB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from htam_engine.evaluate.result import Mismatch

# On input sets beyond KernelBench's own (where the float64 yardstick is passed): the share of an output's
# elements that may be outside the per-element test (rounded down), the whole-output bound still holding.
OUTLIER_SHARE = 1e-6
# Tolerance for dtypes the config does not name (exact for integers and bools).
_FALLBACK_TOLERANCE = 1e-2
# The noise floor is this many times the reference's own distance to float64.
NOISE_FACTOR = 8.0
# A reference whose distance to float64 is at least this share of its own norm is rounding
# noise: the whole-output bound stands down. ("Comparable to its norm"; at 1/NOISE_FACTOR
# the bound already lets all-zeros through, so between the two nothing is lost.)
NEAR_ZERO_NOISE_SHARE = 0.5
# Elements per run of a chunked comparison: its float64/bool temporaries take ~64 bytes an
# element (~260 MiB a run) at the most; a few hundred runs for the largest KernelBench outputs.
CHUNK_ELEMENTS = 1 << 22


@dataclass(slots=True)
class Leaf:
    path: str  # "" for a single output, "[1]" or "[1][0]" inside tuples and lists
    value: Any


def flatten(out: Any, path: str = "") -> list[Leaf]:
    """Leaves of a (possibly nested) output: tensors and plain numbers, in order."""
    if isinstance(out, (tuple, list)):
        leaves: list[Leaf] = []
        for i, item in enumerate(out):
            leaves.extend(flatten(item, f"{path}[{i}]"))
        return leaves
    if isinstance(out, dict):
        leaves = []
        for k in sorted(out, key=str):
            leaves.extend(flatten(out[k], f"{path}[{k!r}]"))
        return leaves
    return [Leaf(path, out)]


def tensors(out: Any) -> list[torch.Tensor]:
    return [leaf.value for leaf in flatten(out) if isinstance(leaf.value, torch.Tensor)]


def tolerance_for(dtype: torch.dtype, tolerances: dict[str, float]) -> float | None:
    """atol = rtol for a floating dtype; None for exact (integer/bool) comparison. A complex
    dtype is held to its parts' dtype (complex64 to float32's), which its real and imaginary
    parts are compared as: the fallback would let complex64 through at 1e-2."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return None
    name = str(dtype.to_real() if dtype.is_complex else dtype).replace("torch.", "")
    return float(tolerances.get(name, _FALLBACK_TOLERANCE))


def _as_tensor(v: Any) -> torch.Tensor | None:
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, bool):
        return torch.tensor(v)
    if isinstance(v, (int, float)):
        return torch.tensor(v, dtype=torch.float64 if isinstance(v, float) else torch.int64)
    return None


def _shape(t: Any) -> list[int] | None:
    return list(t.shape) if isinstance(t, torch.Tensor) else None


def _dtype(t: Any) -> str | None:
    if isinstance(t, torch.Tensor):
        return str(t.dtype).replace("torch.", "")
    return type(t).__name__ if t is not None else None


def _label(path: str, what: str) -> str:
    return f"output{path}: {what}" if path else what


def _index(flat_idx: int, shape: list[int]) -> list[int]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat_idx % dim if dim else 0)
        flat_idx //= dim if dim else 1
    return list(reversed(idx))


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 3.4e38


def compare_leaf(new: Any, ref: Any, path: str, tolerances: dict[str, float], input_set: str,
                 noise: Callable[[], float | None] | None = None, exact: Any = None) -> Mismatch | None:
    """Mismatch for one output leaf, or None when it matches. exact: the float64 yardstick's
    leaf, widening the per-element test by the reference's own error (module docstring)."""
    ref_t, new_t = _as_tensor(ref), _as_tensor(new)

    def mm(note: str, abs_err: float = 0.0, rel_err: float = 0.0, where: list[int] | None = None) -> Mismatch:
        return Mismatch(max_abs_error=_finite(abs_err), max_rel_error=_finite(rel_err), where=where,
                        expected_shape=_shape(ref_t), actual_shape=_shape(new_t),
                        expected_dtype=_dtype(ref), actual_dtype=_dtype(new), input_set=input_set,
                        note=_label(path, note))

    if ref_t is None:  # None or an object: must be equal
        return None if (new is ref or new == ref) else mm(f"expected {ref!r}, got {type(new).__name__}")
    if new_t is None:
        return mm(f"expected a {'tensor' if isinstance(ref, torch.Tensor) else type(ref).__name__}, got {type(new).__name__}")
    if isinstance(ref, torch.Tensor) != isinstance(new, torch.Tensor):
        return mm(f"expected a {type(ref).__name__}, got {type(new).__name__}")
    if list(new_t.shape) != list(ref_t.shape):
        return mm(f"shape {list(new_t.shape)} instead of {list(ref_t.shape)}")
    if new_t.dtype != ref_t.dtype:
        return mm(f"dtype {_dtype(new)} instead of {_dtype(ref)}")
    if new_t.device != ref_t.device:
        return mm(f"on {new_t.device} instead of {ref_t.device}")
    tol = tolerance_for(ref_t.dtype, tolerances)
    if tol is None:
        return _compare_exact(new_t, ref_t, mm)
    exact_t = exact if isinstance(exact, torch.Tensor) and exact.shape == ref_t.shape and exact.is_floating_point() \
        and not ref_t.is_complex() else None
    return _compare_float(new_t, ref_t, tol, mm, noise, exact_t)


def pieces(shape: tuple[int, ...], limit: int) -> Iterator[tuple[Any, ...]]:
    """Index tuples that cut a tensor of `shape` into runs of at most `limit` elements, in
    row-major order: whole rows of the leading dimension where they fit, else one row at a
    time cut the same way. Indexing a tensor with one and flattening it copies at most that run."""
    if not shape:
        yield ()
        return
    inner = math.prod(shape[1:])
    if inner <= limit:
        step = max(1, limit // max(1, inner))
        for i in range(0, shape[0], step):
            yield (slice(i, min(i + step, shape[0])),)
        return
    for i in range(shape[0]):
        for rest in pieces(shape[1:], limit):
            yield (i, *rest)


def runs(*ts: torch.Tensor) -> Iterator[tuple[int, list[torch.Tensor]]]:
    """(flat offset, the same run of each tensor as 1-D) for tensors of one shape."""
    offset = 0
    for idx in pieces(tuple(ts[0].shape), CHUNK_ELEMENTS):
        flat = [t[idx].reshape(-1) for t in ts]
        yield offset, flat
        offset += flat[0].numel()


def _gather(rows: list[torch.Tensor]) -> torch.Tensor:
    """Per-run figures as one [runs, k] float64 tensor on the CPU: one device sync per comparison."""
    return torch.stack(rows).cpu()


def _figures(*values: torch.Tensor) -> torch.Tensor:
    return torch.stack([v.to(torch.float64) for v in values])


def _norm(column: torch.Tensor) -> float:
    """The norm of the whole from the norms of its runs (one run: that norm, exactly)."""
    return float(torch.linalg.vector_norm(column))


def _first_max(column: torch.Tensor) -> int:
    """Row of the largest value (NaN counts as largest, first wins), as torch.argmax over the whole."""
    return int(torch.argmax(column))


def _compare_exact(new: torch.Tensor, ref: torch.Tensor, mm: Callable[..., Mismatch]) -> Mismatch | None:
    if ref.numel() == 0:
        return None
    rows = []
    for offset, (n, r) in runs(new, ref):
        diff = n != r
        rows.append(_figures(diff.sum(), torch.argmax(diff.to(torch.uint8)) + offset))
    stats = _gather(rows)
    bad = int(stats[:, 0].sum())
    if bad == 0:
        return None
    first = int(stats[_first_max((stats[:, 0] > 0).double()), 1])
    where = _index(first, list(ref.shape))
    a, b = new[tuple(where)].item(), ref[tuple(where)].item()
    # in Python's integers where they are integers: int64 values past 2^53 that differ in their low
    # bits are equal once in float64 (an int64 computed in float64 showed "max abs error 0")
    d = float(abs(int(a) - int(b))) if isinstance(a, (int, bool)) and isinstance(b, (int, bool)) else abs(a - b)
    return mm(f"{bad} of {ref.numel()} elements differ (exact comparison for {ref.dtype})", d, 0.0, where)


# Columns of a float comparison's per-run figures.
_NONFINITE_BAD, _ANY_NONFINITE, _WORST_RATIO, _WORST_AT, _MAX_ABS, _MAX_REL, _OUTSIDE, _ERR_NORM, _REF_NORM, \
    _REF_MAX, _FINITE = range(11)


def _allowance(tol: float, r: torch.Tensor, atol: float | None = None) -> torch.Tensor:
    """KernelBench's per-element allowance (atol = rtol = tol, unless atol is given): |out - ref|
    may reach this."""
    return (tol if atol is None else atol) + tol * r.abs()


def _elementwise(n: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per element of a run (float64): where the reference is finite, where the candidate is NaN or
    Inf, where its non-finite values break the rule (NaN must sit where the reference has NaN,
    +-Inf where it has the same Inf), and |n - r| where both are finite (else 0)."""
    r_nan, n_nan = torch.isnan(r), torch.isnan(n)
    r_inf, n_inf = torch.isinf(r), torch.isinf(n)
    finite = ~(r_nan | r_inf)
    nonfinite_bad = (r_nan != n_nan) | (r_inf & (n != r)) | (finite & n_inf)
    diff = torch.where(finite & ~n_nan & ~n_inf, (n - r).abs(), 0.0)
    return finite, n_nan, n_inf, nonfinite_bad, diff


def _outside(tol: float | None, n: torch.Tensor, r: torch.Tensor, atol: float | None = None) -> torch.Tensor:
    """The elements of a run outside the per-element rule (equality where tol is None)."""
    if tol is None:
        return n != r
    n, r = n.double(), r.double()
    finite, _, _, nonfinite_bad, diff = _elementwise(n, r)
    return nonfinite_bad | (finite & (diff > _allowance(tol, r, atol)))


def _float_run(tol: float, offset: int, noise_rms: float, scale: float, n: torch.Tensor, r: torch.Tensor,
               e: torch.Tensor | None = None) -> torch.Tensor:
    n, r = n.double(), r.double()
    finite, n_nan, n_inf, nonfinite_bad, diff = _elementwise(n, r)
    ratio = torch.where(finite, diff / _allowance(tol, r), 0.0)
    if e is not None:  # or close to float64, as the reference is (module docstring)
        e = e.to(device=n.device, dtype=torch.float64)
        known = finite & torch.isfinite(e) & ~n_nan & ~n_inf
        noise = torch.clamp_min((r - e).abs(), noise_rms)  # the reference's error here, or its typical one
        allowed = tol + tol * (e.abs() + scale) + NOISE_FACTOR * noise
        to_exact = torch.where(known, (n - e).abs() / allowed, math.inf)
        ratio = torch.minimum(ratio, to_exact)
    ratio = torch.where(nonfinite_bad, math.inf, ratio)
    worst = torch.argmax(ratio)
    rel = torch.where(finite & (r != 0), diff / r.abs().clamp_min(1e-30), 0.0)
    ref_finite = torch.where(finite, r, 0.0)
    return _figures(nonfinite_bad.sum(), (n_nan | n_inf).any(), ratio[worst], worst + offset, diff.max(),
                    rel.max(), (ratio > 1).sum(), torch.linalg.vector_norm(diff),
                    torch.linalg.vector_norm(ref_finite), ref_finite.abs().max(), finite.sum())


def _plainly_within(new: torch.Tensor, ref: torch.Tensor, tol: float) -> bool:
    """Whether every element is within atol=rtol=tol of the reference by the plain per-element rule
    (so finite where the reference is: a NaN or Inf fails the comparison) and the whole output
    within the bound: the common case, decided in a third of _float_run's passes. It implies the
    full comparison passes (its per-element rule only relaxes the plain one, and where all is
    finite its norms are these), so anything else goes the full way, with the same verdict."""
    rows = []
    for _offset, (n, r) in runs(new, ref):
        n, r = n.double(), r.double()
        diff = (n - r).abs()
        rows.append(_figures((diff <= _allowance(tol, r)).all(), torch.linalg.vector_norm(diff),
                             torch.linalg.vector_norm(r)))
    stats = _gather(rows)
    return bool(stats[:, 0].all()) and _norm(stats[:, 1]) <= tol * _norm(stats[:, 2])


def _compare_float(new: torch.Tensor, ref: torch.Tensor, tol: float, mm: Callable[..., Mismatch],
                   noise: Callable[[], float | None] | None, exact: torch.Tensor | None = None) -> Mismatch | None:
    new, ref = real_parts(new), real_parts(ref)
    if exact is not None:
        exact = real_parts(exact)
    if ref.numel() == 0 or _plainly_within(new, ref, tol):
        return None
    # ||ref - exact|| (the per-element allowance's RMS and the whole-output bound's floor) and the
    # float64 output's scale, in one pass over both
    exact_noise, scale = _noise_and_scale(ref, exact) if exact is not None else (None, 0.0)
    rms = (exact_noise or 0.0) / math.sqrt(ref.numel())
    columns = (new, ref) if exact is None else (new, ref, exact)
    stats = _gather([_float_run(tol, offset, rms, scale, *run) for offset, run in runs(*columns)])
    worst = int(stats[_first_max(stats[:, _WORST_RATIO]), _WORST_AT])
    max_abs, max_rel = float(stats[:, _MAX_ABS].max()), float(stats[:, _MAX_REL].max())
    where = _index(worst, list(ref.shape))
    n_bad_nonfinite = int(stats[:, _NONFINITE_BAD].sum())
    if n_bad_nonfinite:
        kind = "NaN/Inf" if bool(stats[:, _ANY_NONFINITE].any()) else "finite values"
        return mm(f"{n_bad_nonfinite} element(s) with {kind} where the reference differs", max_abs, max_rel, where)
    n_bad = int(stats[:, _OUTSIDE].sum())
    if n_bad > (int(ref.numel() * OUTLIER_SHARE) if exact is not None else 0):
        return mm(f"{n_bad} of {ref.numel()} elements outside atol=rtol={tol:g}", max_abs, max_rel, where)
    # Whole-output bound: rules out all-zeros / constant outputs that slip under atol.
    err_norm, ref_norm = _norm(stats[:, _ERR_NORM]), _norm(stats[:, _REF_NORM])
    if err_norm <= tol * ref_norm:
        return None
    floor = exact_noise if exact_noise is not None else noise() if noise is not None else None
    if floor is not None and floor >= NEAR_ZERO_NOISE_SHARE * ref_norm:
        return None  # the reference is rounding noise around ~0: per-element tolerances govern
    if floor is None:  # no float64 reference: a few float32 ulps of the largest value, per element
        floor = (16 * torch.finfo(torch.float32).eps * float(stats[:, _REF_MAX].max())
                 * math.sqrt(int(stats[:, _FINITE].sum())))
    if err_norm <= tol * ref_norm + NOISE_FACTOR * floor:
        return None
    rel_norm = err_norm / ref_norm if ref_norm > 0 else math.inf
    return mm(f"whole-output relative error {_finite(rel_norm):.3g} exceeds {tol:g} (||out-ref||/||ref||)",
              max_abs, max_rel, where)


def fraction_right(new: Any, ref: Any, tolerances: dict[str, float], other: Any = None) -> float:
    """The share of the reference's output numbers (a complex element is two) the candidate's
    output has right by the comparison's own per-element rule (without the float64 yardstick), or
    equality; a leaf of another shape, dtype or device counts as all wrong. `other`: the
    reference's output on another input set; then only the numbers where the two references
    differ by that rule count (those that depend on the inputs: a ReLU's zeros in both sets, a
    constant, say nothing of who computed them). Read in runs like the comparison.

    The rule's absolute part shrinks with the reference's size below 1 (atol times its RMS): at
    KernelBench's atol every number of an output far smaller than it (a softmax over 32,768
    columns, ~3e-5 each) is "right" whoever computed it, and none depends on the inputs, so the
    share would say nothing (a probe kernel beside PyTorch's softmax passed the work check so)."""
    def alike(t: torch.Tensor | None, like: torch.Tensor) -> bool:
        return t is not None and (t.shape, t.dtype, t.device) == (like.shape, like.dtype, like.device)

    right = total = 0
    new_leaves = {leaf.path: _as_tensor(leaf.value) for leaf in flatten(new)}
    other_leaves = {leaf.path: _as_tensor(leaf.value) for leaf in flatten(other)} if other is not None else {}
    for rl in flatten(ref):
        ref_t = _as_tensor(rl.value)
        if ref_t is None:
            continue
        new_t, other_t = new_leaves.get(rl.path), other_leaves.get(rl.path)
        comparable = alike(new_t, ref_t)
        telling = alike(other_t, ref_t)  # else nothing tells the inputs' part: every number counts
        tol = tolerance_for(ref_t.dtype, tolerances)
        ref_t = real_parts(ref_t)
        atol = None if tol is None else tol * _size_below_one(ref_t)
        counts = []
        for _, (r, o, n) in runs(ref_t, real_parts(other_t) if telling else ref_t,
                                 real_parts(new_t) if comparable else ref_t):
            counted = _outside(tol, o, r, atol) if telling else torch.ones_like(r, dtype=torch.bool)
            good = counted & ~_outside(tol, n, r, atol) if comparable else torch.zeros_like(counted)
            counts.append(torch.stack([counted.sum(), good.sum()]))
        if counts:
            counted_sum, good_sum = torch.stack(counts).sum(dim=0).tolist()
            total, right = total + int(counted_sum), right + int(good_sum)
    return right / total if total else 0.0


def _size_below_one(t: torch.Tensor) -> float:
    """The RMS of t's values, at most 1 (1 where it is 0 or not finite: no scaling then)."""
    if not t.numel():
        return 1.0
    rms = float(torch.linalg.vector_norm(t, dtype=torch.float64)) / math.sqrt(t.numel())
    return min(1.0, rms) if math.isfinite(rms) and rms > 0.0 else 1.0


def compare_outputs(new: Any, ref: Any, tolerances: dict[str, float], input_set: str,
                    noise: Callable[[str], float | None] | None = None, exact: Any = None) -> Mismatch | None:
    """First mismatch between a candidate's output and the reference's, or None.

    noise(path) may return ||ref32 - ref64|| for that leaf (the reference's own rounding
    noise), used only when the whole-output bound fails: as a floor under the bound or, when
    comparable to the reference's own norm, as the sign that the reference is noise around ~0
    (the bound then stands down). It is called lazily because it needs a float64 run of the
    reference; without it the bound always holds. exact: the float64 yardstick's output, on
    input sets beyond KernelBench's own only (module docstring).
    """
    new_leaves, ref_leaves = flatten(new), flatten(ref)
    if [l.path for l in new_leaves] != [l.path for l in ref_leaves]:
        return Mismatch(max_abs_error=0.0, max_rel_error=0.0, where=None,
                        expected_shape=None, actual_shape=None, expected_dtype=None, actual_dtype=None,
                        input_set=input_set,
                        note=f"output structure differs: expected {len(ref_leaves)} output(s) "
                             f"{_structure(ref)}, got {len(new_leaves)} {_structure(new)}")
    exact_leaves = {leaf.path: leaf.value for leaf in flatten(exact)} if exact is not None else {}
    for nl, rl in zip(new_leaves, ref_leaves):
        leaf_noise = (lambda p=rl.path: noise(p)) if noise is not None else None
        m = compare_leaf(nl.value, rl.value, rl.path, tolerances, input_set, leaf_noise, exact_leaves.get(rl.path))
        if m is not None:
            return m
    return None


def _structure(out: Any) -> str:
    if isinstance(out, (tuple, list)):
        return f"{type(out).__name__} of {len(out)}"
    return type(out).__name__


def _comparable(a: Any, b: Any) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape


def real_parts(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its (real, imaginary) pairs: .double() would keep the real parts only."""
    return torch.view_as_real(t) if t.is_complex() else t


def _norms(parts: Iterator[tuple[torch.Tensor, ...]]) -> list[float]:
    """The norm of each of several tensors given run by run: [||x||, ||y||, ...] for runs (x, y, ...)."""
    stats = _gather([_figures(*(torch.linalg.vector_norm(x) for x in run)) for run in parts])
    return [_norm(stats[:, k]) for k in range(stats.shape[1])]


def relative_error(out: torch.Tensor, exact: torch.Tensor) -> float | None:
    """||out - exact|| / ||exact|| over positions where exact is finite; None if undefined."""
    if not _comparable(out, exact) or exact.numel() == 0:
        return None
    out, exact = real_parts(out), real_parts(exact)

    def pairs() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for _, (o, e) in runs(out, exact):
            o, e = o.double(), e.double()
            keep = torch.isfinite(e)
            yield torch.where(keep, o - e, 0.0), torch.where(keep, e, 0.0)

    err, denom = _norms(pairs())
    if denom == 0:
        return None
    return err / denom


def noise_norm(ref: torch.Tensor, exact: torch.Tensor) -> float | None:
    """||ref - exact|| over finite positions: the reference's own rounding noise."""
    if not _comparable(ref, exact):
        return None
    if exact.numel() == 0:
        return 0.0
    return _noise_and_scale(real_parts(ref), real_parts(exact))[0]


def _noise_and_scale(ref: torch.Tensor, exact: torch.Tensor) -> tuple[float, float]:
    """(||ref - exact||, the root-mean-square of exact) over the positions where both are finite,
    read in runs (real tensors of one shape)."""
    def parts() -> Iterator[tuple[torch.Tensor, ...]]:
        for _, (r, e) in runs(ref, exact):
            r, e = r.double(), e.double()
            both = torch.isfinite(e) & torch.isfinite(r)
            yield torch.where(both, r - e, 0.0), torch.where(both, e, 0.0), both.double()

    distance, norm, root_count = _norms(parts())  # the last: the norm of as many ones as positions counted
    return distance, norm / root_count if root_count else 0.0
