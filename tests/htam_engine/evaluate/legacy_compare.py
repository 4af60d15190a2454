"""The comparison as it was before it was chunked (whole-tensor float64 temporaries), kept
unchanged as the oracle the chunked one must agree with on small inputs."""

from __future__ import annotations

import math
from typing import Callable

import torch

from htam_engine.evaluate.checks.compare import NOISE_FACTOR, _finite, _index
from htam_engine.evaluate.result import Mismatch


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
                   noise: Callable[[], float | None] | None, exact: torch.Tensor | None = None) -> Mismatch | None:
    assert exact is None, "the oracle predates the float64 allowance; it compares KernelBench's sets only"
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
