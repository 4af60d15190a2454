"""Output comparison: structure, shape, dtype, per-element tolerance, and a whole-output
relative bound that all-zeros or constant outputs cannot meet.

The per-element test is KernelBench's (|out - ref| <= atol + rtol*|ref|, atol = rtol =
the dtype's tolerance). It alone lets all-zeros pass softmax over a long row (every
probability is below atol), so the whole output must also satisfy
||out - ref|| <= tol * ||ref|| + floor, where floor is the reference's own numerical
noise (its distance to a float64 run) when the caller can supply it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from htam_engine.evaluate.result import Mismatch

# Tolerance for dtypes the config does not name (exact for integers and bools).
_FALLBACK_TOLERANCE = 1e-2
# The noise floor is this many times the reference's own distance to float64.
NOISE_FACTOR = 8.0


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
    """atol = rtol for a floating dtype; None for exact (integer/bool) comparison."""
    name = str(dtype).replace("torch.", "")
    if not (dtype.is_floating_point or dtype.is_complex):
        return None
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
                 noise: Callable[[], float | None] | None = None) -> Mismatch | None:
    """Mismatch for one output leaf, or None when it matches."""
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
    return _compare_float(new_t, ref_t, tol, mm, noise)


def _compare_exact(new: torch.Tensor, ref: torch.Tensor, mm: Callable[..., Mismatch]) -> Mismatch | None:
    diff = new.reshape(-1) != ref.reshape(-1)
    bad = int(diff.sum())
    if bad == 0:
        return None
    first = int(diff.nonzero()[0, 0])
    d = (new.reshape(-1)[first].double() - ref.reshape(-1)[first].double()).abs().item()
    return mm(f"{bad} of {ref.numel()} elements differ (exact comparison for {ref.dtype})", d, 0.0,
              _index(first, list(ref.shape)))


def _compare_float(new: torch.Tensor, ref: torch.Tensor, tol: float, mm: Callable[..., Mismatch],
                   noise: Callable[[], float | None] | None) -> Mismatch | None:
    if new.is_complex():
        new, ref = torch.view_as_real(new), torch.view_as_real(ref)
    n = new.reshape(-1).double()
    r = ref.reshape(-1).double()
    if r.numel() == 0:
        return None
    r_nan, n_nan = torch.isnan(r), torch.isnan(n)
    r_inf, n_inf = torch.isinf(r), torch.isinf(n)
    finite = ~(r_nan | r_inf)
    # NaN must sit where the reference has NaN, +-Inf where it has the same Inf.
    nonfinite_bad = (r_nan != n_nan) | (r_inf & (n != r)) | (finite & n_inf)
    diff = torch.where(finite & ~n_nan & ~n_inf, (n - r).abs(), torch.zeros_like(r))
    allowed = tol + tol * r.abs()
    ratio = torch.where(finite, diff / allowed, torch.zeros_like(r))
    ratio = torch.where(nonfinite_bad, torch.full_like(r, math.inf), ratio)
    worst = int(torch.argmax(ratio))
    max_abs = float(diff.max())
    rel = torch.where(finite & (r != 0), diff / r.abs().clamp_min(1e-30), torch.zeros_like(r))
    max_rel = float(rel.max())
    where = _index(worst, list(ref.shape if not ref.is_complex() else new.shape))
    n_bad_nonfinite = int(nonfinite_bad.sum())
    if n_bad_nonfinite:
        kind = "NaN/Inf" if bool((n_nan | n_inf).any()) else "finite values"
        return mm(f"{n_bad_nonfinite} element(s) with {kind} where the reference differs", max_abs, max_rel, where)
    n_bad = int((ratio > 1).sum())
    if n_bad:
        return mm(f"{n_bad} of {r.numel()} elements outside atol=rtol={tol:g}", max_abs, max_rel, where)
    # Whole-output bound: rules out all-zeros / constant outputs that slip under atol.
    err_norm = float(torch.linalg.vector_norm(diff[finite]))
    ref_norm = float(torch.linalg.vector_norm(r[finite]))
    if err_norm <= tol * ref_norm:
        return None
    floor = noise() if noise is not None else None
    if floor is None:  # no float64 reference: a few float32 ulps of the largest value, per element
        floor = 16 * torch.finfo(torch.float32).eps * float(r[finite].abs().max()) * math.sqrt(int(finite.sum()))
    if err_norm <= tol * ref_norm + NOISE_FACTOR * floor:
        return None
    rel_norm = err_norm / ref_norm if ref_norm > 0 else math.inf
    return mm(f"whole-output relative error {_finite(rel_norm):.3g} exceeds {tol:g} (||out-ref||/||ref||)",
              max_abs, max_rel, where)


def compare_outputs(new: Any, ref: Any, tolerances: dict[str, float], input_set: str,
                    noise: Callable[[str], float | None] | None = None) -> Mismatch | None:
    """First mismatch between a candidate's output and the reference's, or None.

    noise(path) may return ||ref32 - ref64|| for that leaf (the reference's own rounding
    noise), used only when the whole-output bound fails; it is called lazily because it
    needs a float64 run of the reference.
    """
    new_leaves, ref_leaves = flatten(new), flatten(ref)
    if [l.path for l in new_leaves] != [l.path for l in ref_leaves]:
        return Mismatch(max_abs_error=0.0, max_rel_error=0.0, where=None,
                        expected_shape=None, actual_shape=None, expected_dtype=None, actual_dtype=None,
                        input_set=input_set,
                        note=f"output structure differs: expected {len(ref_leaves)} output(s) "
                             f"{_structure(ref)}, got {len(new_leaves)} {_structure(new)}")
    for nl, rl in zip(new_leaves, ref_leaves):
        leaf_noise = (lambda p=rl.path: noise(p)) if noise is not None else None
        m = compare_leaf(nl.value, rl.value, rl.path, tolerances, input_set, leaf_noise)
        if m is not None:
            return m
    return None


def _structure(out: Any) -> str:
    if isinstance(out, (tuple, list)):
        return f"{type(out).__name__} of {len(out)}"
    return type(out).__name__


def relative_error(out: torch.Tensor, exact: torch.Tensor) -> float | None:
    """||out - exact|| / ||exact|| over positions where exact is finite; None if undefined."""
    if not (isinstance(out, torch.Tensor) and isinstance(exact, torch.Tensor)) or out.shape != exact.shape:
        return None
    o, e = out.reshape(-1).double(), exact.reshape(-1).double()
    keep = torch.isfinite(e)
    denom = float(torch.linalg.vector_norm(e[keep]))
    if denom == 0:
        return None
    return float(torch.linalg.vector_norm((o - e)[keep])) / denom


def noise_norm(ref: torch.Tensor, exact: torch.Tensor) -> float | None:
    """||ref - exact|| over finite positions: the reference's own rounding noise."""
    if not (isinstance(ref, torch.Tensor) and isinstance(exact, torch.Tensor)) or ref.shape != exact.shape:
        return None
    r, e = ref.reshape(-1).double(), exact.reshape(-1).double()
    keep = torch.isfinite(e) & torch.isfinite(r)
    return float(torch.linalg.vector_norm((r - e)[keep]))
