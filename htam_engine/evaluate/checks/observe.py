"""What the judge concludes from one call: the candidate's output, its findings, its mismatch.

Everything here runs in the judge on what came back: the output values in the shared
buffers, and the sandbox's description of what forward returned (its structure, types,
shapes, strides, aliasing). A description can only make an output look wrong, never right:
the values the judge compares are the ones in its own buffers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from htam_engine.evaluate import wire
from htam_engine.evaluate.channel import CallResult
from htam_engine.evaluate.checks.memory import tensor_leaves
from htam_engine.evaluate.checks.compare import flatten, real_parts, relative_error, runs, tensors
from htam_engine.evaluate.checks.memory import aliased_outputs, same_values
from htam_engine.evaluate.result import Finding, Mismatch
from htam_engine.evaluate.shared import is_dense

# Precision: the candidate's distance to float64 (||out - exact|| / ||exact||) may be this
# many times the reference's own, and never less than the floor for the output dtype. For
# float32 the floor sits above what a different float32 algorithm costs (fast-math exp,
# another summation order, ~1e-6..1e-5) and below rounding through TF32, float16 or
# bfloat16 (2.5e-4 and up). For float64 (where the yardstick is the reference itself, so the
# reference's own distance is ~0) the floor sits above another float64 summation order at
# KernelBench's sizes (~1e-13..1e-11) and below float32 arithmetic (3e-8 and up). Other dtypes:
# PRECISION_FLOOR_ULPS ulps. A complex output is measured by its real and imaginary parts.
PRECISION_RATIO = 32.0
PRECISION_FLOOR = {torch.float32: 1e-4, torch.float64: 1e-9}
PRECISION_FLOOR_ULPS = 64.0
_PRECISION_CHECKED = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
# How long to watch extra OS threads of the sandbox after a reply for them to end.
NATIVE_THREAD_WATCH_S = 1.0


@dataclass
class Observations:
    """Findings and the first mismatch over a run of calls (first reject ends the run)."""

    findings: list[Finding] = field(default_factory=list)
    mismatch: Mismatch | None = None

    def find(self, rule: str, message: str, severity: str = "reject") -> None:
        if not any(f.rule == rule and f.message == message for f in self.findings):
            self.findings.append(Finding(rule=rule, message=message, severity=severity))

    def note_mismatch(self, m: Mismatch | None) -> None:
        if m is not None and self.mismatch is None:
            self.mismatch = m

    def has(self, rule: str) -> bool:
        return any(f.rule == rule for f in self.findings)

    @property
    def rejected(self) -> bool:
        return any(f.severity == "reject" for f in self.findings)


def _mismatch(note: str, label: str, ref: Any = None, meta: wire.LeafMeta | None = None) -> Mismatch:
    ref_t = ref if isinstance(ref, torch.Tensor) else None
    return Mismatch(max_abs_error=0.0, max_rel_error=0.0, where=None,
                    expected_shape=list(ref_t.shape) if ref_t is not None else None,
                    actual_shape=list(meta.shape) if meta is not None and meta.kind == "tensor" else None,
                    expected_dtype=str(ref_t.dtype).removeprefix("torch.") if ref_t is not None else None,
                    actual_dtype=(meta.dtype or meta.type_name) if meta is not None else None,
                    input_set=label, note=note)


def _where(path: str, what: str) -> str:
    return f"output{path}: {what}" if path else what


def _rebuild(ref: Any, values: Iterator[Any]) -> Any:
    """`ref`'s structure with its leaves replaced, in flatten order, by `values`."""
    if isinstance(ref, (tuple, list)):
        return type(ref)(_rebuild(x, values) for x in ref) if type(ref) in (tuple, list) else \
            [_rebuild(x, values) for x in ref]
    if isinstance(ref, dict):
        return {k: _rebuild(ref[k], values) for k in sorted(ref, key=str)}
    return next(values)


def candidate_output(result: CallResult, ref_out: Any, ref_inputs: list[torch.Tensor], label: str,
                     obs: Observations) -> Any | None:
    """The candidate's output in the reference's structure, read from the shared buffers; None when
    its description already shows a mismatch (recorded) or a rule it broke (recorded)."""
    metas = result.reply.outputs
    ref_leaves = flatten(ref_out)
    if [m.path for m in metas] != [leaf.path for leaf in ref_leaves]:
        # where each leaf sits, not only how many: a one-tuple against a bare tensor is one output either way
        where = lambda paths: ", ".join(repr(p or "(the whole output)") for p in paths[:4])  # noqa: E731
        kinds = ", ".join(m.type_name for m in metas[:4])
        obs.note_mismatch(_mismatch(f"output structure differs: expected {len(ref_leaves)} output(s) at "
                                    f"{where([leaf.path for leaf in ref_leaves])}, got {len(metas)} ({kinds}) at "
                                    f"{where([m.path for m in metas])}", label))
        return None
    ref_aliases = {o for o, _ in aliased_outputs(ref_out, ref_inputs)}
    values: list[Any] = []
    ok = True
    for index, (meta, leaf) in enumerate(zip(metas, ref_leaves)):
        ref = leaf.value
        if isinstance(ref, torch.Tensor):
            value = _tensor_leaf(meta, ref, index, index in ref_aliases, result, label, obs)
            ok = ok and value is not None
            values.append(value)
        elif meta.kind == "number":
            values.append(meta.value)
        elif meta.kind == "none":
            values.append(None)
        else:
            obs.note_mismatch(_mismatch(_where(leaf.path, f"expected {type(ref).__name__}, got {meta.type_name}"),
                                        label, ref, meta))
            ok = False
            values.append(None)
    return _rebuild(ref_out, iter(values)) if ok else None


def _tensor_leaf(meta: wire.LeafMeta, ref: torch.Tensor, index: int, ref_aliases: bool, result: CallResult,
                 label: str, obs: Observations) -> torch.Tensor | None:
    path = meta.path
    if meta.kind != "tensor":
        obs.note_mismatch(_mismatch(_where(path, f"expected a tensor, got {meta.type_name}"), label, ref, meta))
        return None
    if meta.type_name != "Tensor":
        obs.find("lazy_output", f"forward on {label} returned a {meta.type_name}, a torch.Tensor subclass "
                                "(lazy or deferred values are not accepted)")
        return None
    if list(meta.shape) != list(ref.shape):
        obs.note_mismatch(_mismatch(_where(path, f"shape {list(meta.shape)} instead of {list(ref.shape)}"), label, ref,
                                    meta))
        return None
    expected_dtype = str(ref.dtype).removeprefix("torch.")
    if meta.dtype != expected_dtype:
        obs.note_mismatch(_mismatch(_where(path, f"dtype {meta.dtype} instead of {expected_dtype}"), label, ref, meta))
        return None
    if torch.device(meta.device).type != ref.device.type:
        obs.note_mismatch(_mismatch(_where(path, f"on {meta.device} instead of {ref.device}"), label, ref, meta))
        return None
    if not is_dense(meta.shape, meta.stride) and is_dense(ref.shape, ref.stride()):
        obs.find("expanded_output", f"{_where(path, 'the output')} on {label} has strides {list(meta.stride)} for "
                                    f"shape {list(meta.shape)}: expanded (stride 0) or overlapping, where the "
                                    "reference's output is dense")
        return None
    if meta.aliases >= 0 and not ref_aliases:
        obs.find("input_alias", f"output #{index} shares memory with input #{meta.aliases} on {label} "
                                "(the reference's does not)")
        return None
    if not meta.copied or path not in result.outputs:
        obs.note_mismatch(_mismatch(_where(path, "the output was not delivered"), label, ref, meta))
        return None
    return result.outputs[path]


def record_notes(result: CallResult, label: str, obs: Observations) -> None:
    """The sandbox's own early findings (patched clock, stray threads...), as reject findings."""
    seen = {f.rule for f in obs.findings}
    for note in result.reply.notes:
        if note.rule not in seen:
            obs.find(note.rule, f"{note.message} (seen after forward on {label})")
            seen.add(note.rule)


def check_mutation(result: CallResult, pristine: list[Any], allowed: set[int], label: str,
                   obs: Observations) -> None:
    """The shared input buffers must still hold what the judge wrote (unless the reference, too,
    changes that input)."""
    changed = [i for i, (now, before) in enumerate(zip(result.inputs, tensor_leaves(pristine)))
               if i not in allowed and not same_values(now, before)]
    if changed:
        which = ", ".join(f"#{i}" for i in changed)
        obs.find("input_mutation", f"forward modified input {which} in place on {label} (the reference does not)")


def check_native_threads(result: CallResult, thread_count: Any, label: str, obs: Observations) -> None:
    """More OS threads after the call than before: a pool created for good stays, while work left
    running ends soon after forward returned."""
    before, after = result.threads_before, result.threads_after
    if before is None or after is None or after <= before:
        return
    deadline = time.monotonic() + NATIVE_THREAD_WATCH_S
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = thread_count()
        if now is not None and now <= before:
            obs.find("background_thread", f"forward on {label} returned while {after - before} native thread(s) it "
                                          "started were still running")
            return


@dataclass(frozen=True)
class Precision:
    """One output leaf's distance to float64 (||out - exact|| / ||exact||) and the reference's."""

    path: str
    dtype: torch.dtype
    candidate: float
    reference: float


def check_precision(out: Any, ref_out: Any, exact: Any, label: str, obs: Observations) -> list[Precision]:
    """A `lower_precision` finding per leaf over its bound; every leaf's figures, for the rules that
    read them too (checks/rounded.py)."""
    measured: list[Precision] = []
    if exact is None:
        return measured
    exact_leaves = {leaf.path: leaf.value for leaf in flatten(exact)}
    ref_leaves = {leaf.path: leaf.value for leaf in flatten(ref_out)}
    for leaf in flatten(out):
        e, r, n = exact_leaves.get(leaf.path), ref_leaves.get(leaf.path), leaf.value
        if not (isinstance(r, torch.Tensor) and isinstance(n, torch.Tensor) and isinstance(e, torch.Tensor)
                and n.dtype == r.dtype and r.dtype.is_complex == e.dtype.is_complex):
            continue
        r, n, e = real_parts(r), real_parts(n), real_parts(e)
        if r.dtype not in _PRECISION_CHECKED:
            continue
        e_new, e_ref = relative_error(n, e), relative_error(r, e)
        if e_new is None or e_ref is None:
            continue
        measured.append(Precision(leaf.path, r.dtype, e_new, e_ref))
        floor = PRECISION_FLOOR.get(r.dtype, PRECISION_FLOOR_ULPS * torch.finfo(r.dtype).eps)
        bound = max(PRECISION_RATIO * e_ref, floor)
        if e_new > bound:
            where = f"output{leaf.path}" if leaf.path else "output"
            obs.find("lower_precision", f"{where} on {label}: relative error {e_new:.2e} against a float64 "
                                        f"reference where the reference's own is {e_ref:.2e} (bound {bound:.2e}): "
                                        f"computed in lower precision than {r.dtype}", "incorrect")
    return measured


# The position weights of output_fingerprint: element k (flat, from 0) weighs 1 + (k + 1) mod 1009.
_WEIGHT_PERIOD = 1009


def output_fingerprint(out: Any) -> tuple[float, ...]:
    """Position-weighted sums of every tensor leaf: equal outputs give equal fingerprints. Read in
    runs of CHUNK_ELEMENTS (its float64 temporaries bounded by a run, not the output's size); the
    sums are kept on the device and read once per leaf. Fingerprints are only compared with others
    of the same evaluation, taken the same way."""
    prints: list[float] = []
    for t in tensors(out):
        if t.numel() == 0:
            prints += [0.0, 0.0]
            continue
        v = real_parts(t.detach())
        weighted = torch.zeros((), dtype=torch.float64, device=v.device)
        total = torch.zeros((), dtype=torch.float64, device=v.device)
        for offset, (run,) in runs(v):
            x = torch.nan_to_num(run.double(), nan=1.5e300, posinf=1.7e300, neginf=-1.7e300)
            w = torch.arange(offset + 1, offset + x.numel() + 1, device=x.device,
                             dtype=torch.float64).remainder_(_WEIGHT_PERIOD).add_(1)
            weighted += (x * w).sum()
            total += x.abs().sum()
        prints += [float(weighted), float(total)]
    return tuple(p if math.isfinite(p) else 0.0 for p in prints)


def _chunked_all(t: torch.Tensor, test: Any) -> bool:
    """test(run).all() over every run of `t` (bool temporaries bounded by a run)."""
    return all(bool(test(run).all()) for _, (run,) in runs(t))


def nonfinite(out: Any) -> bool:
    return any(t.is_floating_point() and not _chunked_all(t, torch.isfinite) for t in tensors(out))
