"""check_candidate: correctness on several input sets plus the runtime integrity rules.

Order of calls (one ModelNew instance throughout, the candidate always before the
reference on each set, freed memory poisoned before each candidate call):

  get_inputs#0..N-1      fresh draws; #0 also against a float64 reference (precision)
  get_inputs#0 (rerun)   same values, different garbage in freed memory (uninitialized reads)
  signed-normal          another distribution, where the reference stays finite
                         (positive-normal where the reference needs x >= 0)
  heavy-tailed           for tiny outputs (losses, scalar reductions)
  unseen-shape           sizes the candidate was never shown
  get_inputs#K repeated  the same buffers again, then a fresh copy of the same content:
                         fewer kernel launches or the same output storage means a cache
  get_inputs#0 refilled  new get_inputs values written into the same buffers (address-keyed
                         caches); last, and skipped for a kernel already wrong on get_inputs'
                         values, so a wrong kernel is blamed as wrong, not as a cache

Every forward, candidate's and reference's, starts from the same random state, so a problem
with random ops (dropout in training mode) compares like with like.
Every call is followed by the per-call rules (kernel launched, no thread or stream still
busy, plain torch.Tensor outputs, no reuse of earlier outputs) and Guards.verify(); the
first reject-level finding ends the run.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from htam_engine.evaluate.checks.compare import compare_outputs, flatten, noise_norm, relative_error, tensors
from htam_engine.evaluate.checks.context import CheckContext, CheckReport
from htam_engine.evaluate.checks.exact import Float64Reference
from htam_engine.evaluate.checks.guards import native_thread_count
from htam_engine.evaluate.checks.inputs import (CHECK_SEED_OFFSET, RECHECK_SEED_OFFSET, TIMING_SEED_OFFSET, draw,
                                                has_floats, heavy_tailed, refill_in_place, signed_normal)
from htam_engine.evaluate.checks.memory import (NAN, SENTINEL, aliased_outputs, changed_inputs, clone_inputs,
                                                overlaps, perturbed_heap, poison, same_values, sizes_of)
from htam_engine.evaluate.result import Finding, Mismatch, Status
from htam_engine.evaluate.seeding import build_models, construct, seeded

# Precision: the candidate's distance to float64 (||out - exact|| / ||exact||) may be this
# many times the reference's own, and never less than the floor for the output dtype. For
# float32 the floor sits above what a different float32 algorithm costs (fast-math exp,
# another summation order, ~1e-6..1e-5) and below rounding through TF32, float16 or
# bfloat16 (2.5e-4 and up). Other dtypes: PRECISION_FLOOR_ULPS ulps.
PRECISION_RATIO = 32.0
PRECISION_FLOOR = {torch.float32: 1e-4}
PRECISION_FLOOR_ULPS = 64.0
# How long to watch extra OS threads after forward returns for them to end.
NATIVE_THREAD_WATCH_S = 1.0
# Bound before any candidate runs (a candidate may patch the time module).
_monotonic, _sleep = time.monotonic, time.sleep
# Outputs this small (elements) are losses / scalar reductions: add a heavy-tailed set.
TINY_OUTPUT = 16


class CandidateFailed(Exception):
    """ModelNew raised; str() is one line naming the input set."""

    def __init__(self, message: str, status: Status = Status.RUNTIME_ERROR):
        super().__init__(message)
        self.status = status


class ReferenceFailed(Exception):
    pass


class Rejected(Exception):
    """A reject-severity finding was recorded: the verdict is settled, stop running the candidate
    (its threads or patches could disturb whatever would run next)."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _status_of(exc: BaseException) -> Status:
    """Build failures surfacing at construction or first launch are compile errors."""
    text = f"{type(exc).__name__} {exc}"
    if "Error building extension" in text or "CompilationError" in text or "CompileTimeAssertionFailure" in text:
        return Status.COMPILE_ERROR
    return Status.RUNTIME_ERROR


def _nonfinite(out: Any) -> bool:
    return any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in tensors(out))


def _numel(out: Any) -> int:
    return sum(t.numel() for t in tensors(out)) + sum(1 for leaf in flatten(out) if isinstance(leaf.value, (int, float)))


def _fingerprint(t: torch.Tensor) -> tuple[float, float]:
    """Two position-weighted sums: cheap to keep, and any rewrite of the values changes them."""
    if t.numel() == 0:
        return (0.0, 0.0)
    v = t.detach().reshape(-1)
    v = torch.view_as_real(v).reshape(-1) if v.is_complex() else v
    v = torch.nan_to_num(v.double(), nan=1.5e300, posinf=1.7e300, neginf=-1.7e300)
    w = torch.arange(1, v.numel() + 1, device=v.device, dtype=torch.float64).remainder_(1009).add_(1)
    return (float((v * w).sum()), float(v.abs().sum()))


def _same_init(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and same_values(x, y)):
                return False
        elif x != y:
            return False
    return True


class _Checker:
    def __init__(self, ctx: CheckContext):
        self.ctx = ctx
        self.device = ctx.device
        self.cfg = ctx.config
        self.guards = ctx.guards
        self.findings: list[Finding] = []
        self.mismatch: Mismatch | None = None
        self.sizes: set[int] = set()
        # Outputs handed out so far, with a fingerprint of their values: later calls must
        # neither return the same memory nor overwrite them. Bounded (see _check_reuse).
        self.live: list[tuple[str, Any, list[tuple[float, float]]]] = []
        self.exact: Float64Reference | None = None
        self._exact_cache: dict[str, Any] = {}
        self.baseline_launches = 0

    # -- bookkeeping -------------------------------------------------------------------------------
    def find(self, rule: str, message: str, severity: str = "reject") -> None:
        if not any(f.rule == rule and f.message == message for f in self.findings):
            self.findings.append(Finding(rule=rule, message=message, severity=severity))

    def note_mismatch(self, m: Mismatch | None) -> None:
        if m is not None and self.mismatch is None:
            self.mismatch = m

    def verify_guards(self, when: str) -> None:
        """Guards' findings (patched timers, settings, stray threads), once per rule."""
        seen = {f.rule for f in self.findings}
        for f in self.guards.verify():
            if f.rule not in seen:
                self.find(f.rule, f"{f.message} (seen {when})", f.severity)
                seen.add(f.rule)

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    # -- calls ----------------------------------------------------------------------------------------
    def call_candidate(self, model: Any, inputs: list[Any], label: str, marker: float = NAN,
                       repeat_launches: int | None = None) -> tuple[Any, int]:
        """Run ModelNew on `inputs` with freed memory poisoned; record per-call findings.

        repeat_launches: for a call on content seen before, the kernel calls a call on new
        content made (after warm-up); fewer means the result came from a cache.
        """
        self.sizes |= sizes_of(inputs)
        poison(self.device, self.sizes, marker)
        threads_before = {t.ident for t in self.guards.stray_threads()}
        native_before = native_thread_count()
        k0 = self.guards.kernel_calls
        try:
            with torch.no_grad(), seeded(self.cfg.seed), perturbed_heap(marker):
                out = model(*inputs)
        except Exception as e:
            raise CandidateFailed(f"ModelNew.forward raised on {label}: {_one_line(e)}", _status_of(e)) from e
        launched = self.guards.kernel_calls - k0
        if launched == 0 and self.guards.extension_ops:
            launched = self._extension_op_calls(model, inputs)
        self._check_async(out, label)
        self._check_threads(label, threads_before, native_before)
        if repeat_launches is not None and launched < repeat_launches:
            self.find("caching", f"forward on {label} ran {launched} kernel call(s) where a call on new inputs "
                                 f"runs {repeat_launches}: the result came from a cache")
        elif launched == 0:
            self.find("no_kernel", f"no custom kernel ran during forward on {label} "
                                   "(pure PyTorch, or a fallback around the kernel)")
        for t in tensors(out):
            if type(t) is not torch.Tensor:
                self.find("lazy_output", f"forward on {label} returned a {type(t).__name__}, "
                                         "a torch.Tensor subclass (lazy or deferred values are not accepted)")
        self._check_reuse(out, inputs, label)
        self.sizes |= sizes_of(out)
        self.verify_guards(f"after forward on {label}")
        if any(f.severity == "reject" for f in self.findings):
            raise Rejected()
        return out, launched

    def _extension_op_calls(self, model: Any, inputs: list[Any]) -> int:
        """Calls of operators a built extension registered (torch.ops.<ns>.<op>), counted on
        a rerun of the same call: such kernels bypass the counted module functions."""
        from torch.overrides import TorchFunctionMode

        ops = self.guards.extension_ops
        calls = [0]

        class CountExtensionOps(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                name = getattr(func, "_qualified_op_name", None) or getattr(getattr(func, "_schema", None), "name", None)
                if name in ops:  # only calls that returned: a failed try does not count
                    calls[0] += 1
                return out

        try:
            with torch.no_grad(), seeded(self.cfg.seed), CountExtensionOps():
                model(*clone_inputs(inputs))
        except Exception:
            return 0
        return calls[0]

    def call_reference(self, model: Any, inputs: list[Any], label: str) -> Any:
        try:
            with torch.no_grad(), seeded(self.cfg.seed):
                out = model(*inputs)
        except Exception as e:
            raise ReferenceFailed(f"the reference Model raised on {label}: {_one_line(e)}") from e
        self.sync()
        return out

    def _check_threads(self, label: str, threads_before: set[int | None], native_before: int | None) -> None:
        """No thread the candidate started may outlive forward."""
        new = [t for t in self.guards.stray_threads() if t.ident not in threads_before]
        if new:
            self.find("background_thread", f"forward on {label} left {len(new)} thread(s) running "
                                           f"({', '.join(t.name for t in new[:3])})")
            return
        if self.device.startswith("cuda"):
            return  # the CUDA driver starts and ends helper threads of its own; streams are checked instead
        native_after = native_thread_count()
        if native_before is None or native_after is None or native_after <= native_before:
            return
        # More OS threads than before: a pool created for good (OpenMP, the CUDA driver) stays,
        # while work left running ends soon after forward returned.
        deadline = _monotonic() + NATIVE_THREAD_WATCH_S
        while _monotonic() < deadline:
            _sleep(0.02)
            now = native_thread_count()
            if now is not None and now <= native_before:
                self.find("background_thread", f"forward on {label} returned while {native_after - native_before} "
                                               "native thread(s) it started were still running")
                return

    def _check_async(self, out: Any, label: str) -> None:
        """On CUDA: all work forward queued must be ordered before what the caller queues next.

        Side streams are fine when joined (the current stream waits on them); the test is
        whether anything is still running once the current stream's work has finished,
        and whether the output read in stream order equals the output after a full sync.
        """
        if not self.device.startswith("cuda"):
            return
        for f in self.guards.current_stream_findings():
            self.find(f.rule, f.message)
        early = [t.clone() for t in tensors(out)]  # ordered on the current stream only
        torch.cuda.current_stream().synchronize()
        if self.guards.busy_streams():
            self.find("side_stream", f"forward on {label} returned with work on a CUDA stream it created that the "
                                     "current stream does not wait for")
        torch.cuda.synchronize()
        if any(not same_values(a, b) for a, b in zip(early, tensors(out))):
            self.find("side_stream", f"output of forward on {label} changed after torch.cuda.synchronize(): "
                                     "work was still running on another stream")

    def _check_reuse(self, out: Any, inputs: list[Any], label: str) -> None:
        # Outputs that alias this call's inputs are judged by the aliasing rule instead.
        own = [t for t in tensors(out) if not any(overlaps(t, x) for x in tensors(inputs))]
        for prev_label, prev, _ in self.live:
            if any(overlaps(t, p) for t in own for p in tensors(prev)):
                self.find("output_reuse", f"forward on {label} returned the same memory as its output for "
                                          f"{prev_label} (a cached result or one reused output buffer)")
                break
        self.live.append((label, out, [_fingerprint(t) for t in tensors(out)]))
        # Keep the fresh get_inputs outputs (the repeats refer to them) and the latest two:
        # big outputs must not pile up across a dozen calls.
        keep = [e for i, e in enumerate(self.live) if e[0].startswith("get_inputs#") and " " not in e[0]
                or i >= len(self.live) - 2]
        self.live[:] = keep

    # -- the float64 yardstick ---------------------------------------------------------------------------
    def exact_outputs(self, label: str, pristine: list[Any]) -> Any | None:
        if label not in self._exact_cache and self.exact is not None:
            self._exact_cache[label] = self.exact.outputs(clone_inputs(pristine))
        return self._exact_cache.get(label)

    def noise_for(self, label: str, pristine: list[Any], ref_out: Any):
        def noise(path: str) -> float | None:
            exact = self.exact_outputs(label, pristine)
            if exact is None:
                return None
            e = {leaf.path: leaf.value for leaf in flatten(exact)}.get(path)
            r = {leaf.path: leaf.value for leaf in flatten(ref_out)}.get(path)
            return noise_norm(r, e) if e is not None else None

        return noise

    # -- one input set -------------------------------------------------------------------------------------
    def run_set(self, ref_model: Any, new_model: Any, pristine: list[Any], label: str,
                only_if_reference_finite: bool = False, marker: float = NAN) -> tuple[list[Any], Any, Any] | None:
        """Candidate, then reference, on copies of `pristine`; record findings and the mismatch.

        Returns (candidate's input buffers, candidate output, reference output), or None
        when only_if_reference_finite and the reference does not accept these inputs.
        """
        cand_in, ref_in = clone_inputs(pristine), clone_inputs(pristine)
        out, _ = self.call_candidate(new_model, cand_in, label, marker)
        mutated = set(changed_inputs(cand_in, pristine))
        ref_out = self.call_reference(ref_model, ref_in, label)
        if only_if_reference_finite and _nonfinite(ref_out):
            return None
        ref_mutated = set(changed_inputs(ref_in, pristine))
        if mutated - ref_mutated:
            which = ", ".join(f"#{i}" for i in sorted(mutated - ref_mutated))
            self.find("input_mutation", f"forward modified input {which} in place on {label} (the reference does not)")
        aliases = set(aliased_outputs(out, cand_in)) - set(aliased_outputs(ref_out, ref_in))
        if aliases:
            o, i = sorted(aliases)[0]
            self.find("input_alias", f"output #{o} shares memory with input #{i} on {label} (the reference's does not)")
        m = compare_outputs(out, ref_out, self.cfg.tolerances, label, self.noise_for(label, pristine, ref_out))
        self.note_mismatch(m)
        return cand_in, out, ref_out

    # -- the sequence -------------------------------------------------------------------------------------
    def run(self) -> CheckReport:
        inst, cfg = self.ctx.instance, self.cfg
        self.guards.trust_code_of(inst.Model, inst.get_inputs)
        init = list(inst.get_init_inputs())
        try:
            ref_model = construct(inst.Model, init, cfg.seed, self.device)
        except Exception as e:
            raise ReferenceFailed(f"the reference Model could not be constructed: {_one_line(e)}") from e
        try:
            new_model = construct(self.ctx.model_new_cls, init, cfg.seed, self.device)
        except Exception as e:
            raise CandidateFailed(f"ModelNew(*get_init_inputs()) raised: {_one_line(e)}", _status_of(e)) from e
        report = CheckReport(status=Status.OK, correct=False, ref_model=ref_model, new_model=new_model)
        self.exact = Float64Reference(ref_model)

        trials = max(2, int(cfg.correctness_trials))
        seed0 = cfg.seed + CHECK_SEED_OFFSET
        sets = [(f"get_inputs#{k}", draw(inst.get_inputs, seed0 + k)) for k in range(trials)]
        results = []
        launches: list[int] = []
        for label, pristine in sets:
            k0 = self.guards.kernel_calls
            results.append(self.run_set(ref_model, new_model, pristine, label))
            launches.append(self.guards.kernel_calls - k0)
        label0, pristine0 = sets[0]
        _, out0, ref0 = results[0]
        if self.mismatch is None:
            self.check_precision(label0, pristine0, out0, ref0)
        self.baseline_launches = min(launches[1:])  # after the first call's warm-up (autotuning, lazy init)
        self.check_uninitialized(new_model, label0, pristine0, out0)
        self.check_other_distributions(ref_model, new_model, pristine0, ref0, seed0)
        self.check_unseen_shape(ref_model, new_model, init, seed0)
        self.check_caching(ref_model, new_model, sets, results, seed0)
        for label, out, prints in self.live:
            if any(_fingerprint(t) != p for t, p in zip(tensors(out), prints)):
                self.find("output_reuse", f"the output returned for {label} changed during later calls "
                                          "(one output buffer reused across calls)")
                break
        self.verify_guards("after the checks")
        report.timing_inputs = draw(inst.get_inputs, cfg.seed + TIMING_SEED_OFFSET)
        return report

    def check_precision(self, label: str, pristine: list[Any], out: Any, ref_out: Any) -> None:
        exact = self.exact_outputs(label, pristine)
        if exact is None:
            return
        exact_leaves = {leaf.path: leaf.value for leaf in flatten(exact)}
        ref_leaves = {leaf.path: leaf.value for leaf in flatten(ref_out)}
        for leaf in flatten(out):
            e, r, n = exact_leaves.get(leaf.path), ref_leaves.get(leaf.path), leaf.value
            if not (isinstance(r, torch.Tensor) and isinstance(n, torch.Tensor) and r.dtype in
                    (torch.float32, torch.float16, torch.bfloat16) and n.dtype == r.dtype):
                continue
            e_new, e_ref = relative_error(n, e), relative_error(r, e)
            if e_new is None or e_ref is None:
                continue
            floor = PRECISION_FLOOR.get(r.dtype, PRECISION_FLOOR_ULPS * torch.finfo(r.dtype).eps)
            bound = max(PRECISION_RATIO * e_ref, floor)
            if e_new > bound:
                where = f"output{leaf.path}" if leaf.path else "output"
                self.find("lower_precision", f"{where} on {label}: relative error {e_new:.2e} against a float64 "
                                             f"reference where the reference's own is {e_ref:.2e} (bound "
                                             f"{bound:.2e}): computed in lower precision than {r.dtype}",
                          "incorrect")

    def check_uninitialized(self, new_model: Any, label: str, pristine: list[Any], first_out: Any) -> None:
        """Same inputs, different garbage in freed memory: outputs must not change."""
        again, _ = self.call_candidate(new_model, clone_inputs(pristine), f"{label} (rerun)", SENTINEL,
                                       self.baseline_launches)
        strict = {k: v * 1e-2 for k, v in self.cfg.tolerances.items()}
        m = compare_outputs(again, first_out, strict, f"{label} (rerun)")
        if m is not None:
            self.find("uninitialized_memory", f"two runs on the same {label} inputs differ ({m.note}) when freed "
                                              "memory holds different values: the output reads uninitialized memory")

    def check_caching(self, ref_model: Any, new_model: Any, sets: list, results: list, seed: int) -> None:
        label_k, pristine_k = sets[-1]
        bufs_k, out_k, ref_k = results[-1]
        # A kernel already wrong on get_inputs' own values is blamed as wrong, not as a cache. One
        # wrong only on another distribution or shape may still cache by address: a later input
        # landing on a cached address gets a stale (even wrong-shaped) output there.
        ok_before = self.mismatch is None or not self.mismatch.input_set.startswith("get_inputs#")

        def repeat(inputs: list[Any], label: str) -> None:
            out, _ = self.call_candidate(new_model, inputs, label, repeat_launches=self.baseline_launches)
            self.note_mismatch(compare_outputs(out, ref_k, self.cfg.tolerances, label))

        if not changed_inputs(bufs_k, pristine_k):
            repeat(bufs_k, f"{label_k} repeated in the same buffers")
        repeat(clone_inputs(pristine_k), f"a fresh copy of {label_k}")

        label0 = sets[0][0]
        bufs0 = results[0][0]
        # New values from get_inputs itself (same distribution), written into the same buffers.
        fresh = refill_in_place(bufs0, draw(self.ctx.instance.get_inputs, seed + 500))
        label = f"{label0} refilled in place"
        out, _ = self.call_candidate(new_model, bufs0, label)
        ref_out = self.call_reference(ref_model, clone_inputs(fresh), label)
        m = compare_outputs(out, ref_out, self.cfg.tolerances, label, self.noise_for(label, fresh, ref_out))
        if m is not None and ok_before:
            self.find("caching", f"after new values were written into {label0}'s input buffers the output no longer "
                                 f"matches ({m.note}): results are cached by input address")
        self.note_mismatch(m)

    def check_other_distributions(self, ref_model: Any, new_model: Any, pristine: list[Any], ref0: Any,
                                  seed: int) -> None:
        """Signed normal (or, where the reference needs x >= 0, its absolute value); for tiny
        outputs also heavy-tailed. A set the reference rejects (non-finite output, an error)
        is skipped: the candidate ran first, so its per-call findings still count."""
        if not self.cfg.check_other_distribution or not has_floats(pristine):
            return
        finite_only = not _nonfinite(ref0)
        normal = signed_normal(pristine, seed + 100)
        self.first_accepted(ref_model, new_model, finite_only, [
            ("signed-normal", normal),
            ("positive-normal", [x.abs() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                 for x in normal]),
        ])
        if _numel(ref0) <= TINY_OUTPUT:
            self.first_accepted(ref_model, new_model, finite_only, [
                ("heavy-tailed", heavy_tailed(pristine, seed + 200)),
                ("heavy-tailed (positive)", heavy_tailed(pristine, seed + 200, positive=True)),
            ])

    def first_accepted(self, ref_model: Any, new_model: Any, finite_only: bool,
                       candidates: list[tuple[str, list[Any]]]) -> None:
        for label, values in candidates:
            try:
                if self.run_set(ref_model, new_model, values, label, only_if_reference_finite=finite_only):
                    return
            except ReferenceFailed:
                continue

    def check_unseen_shape(self, ref_model: Any, new_model: Any, init: list[Any], seed: int) -> None:
        ctx = self.ctx
        if not (self.cfg.check_unseen_shape and ctx.make_variant and ctx.unseen_overrides):
            return
        try:
            variant = ctx.make_variant(dict(ctx.unseen_overrides))
            v_init = list(variant.get_init_inputs())
            pristine = draw(variant.get_inputs, seed + 300)
        except Exception as e:
            self.find("unseen_shape_skipped", f"no unseen-shape set: the problem failed under "
                                              f"{ctx.unseen_overrides}: {_one_line(e)}", "warn")
            return
        if not _same_init(v_init, init):  # the overrides touched construction too: build a new pair
            ref_model, new_model = build_models(variant.Model, ctx.model_new_cls, v_init, self.cfg.seed, self.device)
        shapes = [list(x.shape) for x in pristine if isinstance(x, torch.Tensor)]
        label = "unseen-shape"
        try:
            self.run_set(ref_model, new_model, pristine, label)
        except CandidateFailed as e:
            try:  # blame the candidate only for shapes the reference itself accepts
                self.call_reference(ref_model, clone_inputs(pristine), label)
            except ReferenceFailed as ref_error:
                self.find("unseen_shape_skipped", f"no unseen-shape set: {ref_error}", "warn")
                return
            self.find("shape_specialized", f"fails on input shapes it was not shown {shapes} "
                                           f"({ctx.unseen_overrides}): {e}", "incorrect")
            return
        except ReferenceFailed as e:
            self.find("unseen_shape_skipped", f"no unseen-shape set: {e}", "warn")
            return
        if self.mismatch is not None and self.mismatch.input_set == label:
            self.find("shape_specialized", f"wrong on input shapes it was not shown {shapes} "
                                           f"({ctx.unseen_overrides})", "incorrect")


def _verdict(findings: list[Finding], mismatch: Mismatch | None) -> tuple[Status, str]:
    rejects = [f for f in findings if f.severity == "reject"]
    if rejects:
        return Status.REJECTED, rejects[0].message
    incorrect = [f for f in findings if f.severity == "incorrect"]
    if mismatch is not None:
        where = f" at {mismatch.where}" if mismatch.where else ""
        return Status.INCORRECT, (f"output mismatch on {mismatch.input_set}: {mismatch.note} "
                                  f"(max abs error {mismatch.max_abs_error:.3g}{where})")
    if incorrect:
        return Status.INCORRECT, incorrect[0].message
    return Status.OK, ""


def recheck_after_timing(ctx: CheckContext, report: CheckReport) -> list[Finding]:
    """One more checked call on fresh inputs, after the timing loop has run the candidate
    many more times than the checks did: a candidate that behaves for its first calls and
    then serves cached or stale results is caught here. Empty list: still honest."""
    if report.new_model is None or report.ref_model is None:
        return []
    checker = _Checker(ctx)
    checker.guards.trust_code_of(ctx.instance.Model, ctx.instance.get_inputs)
    pristine = draw(ctx.instance.get_inputs, ctx.config.seed + RECHECK_SEED_OFFSET)
    label = "fresh inputs after timing"
    try:
        checker.run_set(report.ref_model, report.new_model, pristine, label)
    except Rejected:
        pass
    except CandidateFailed as e:
        checker.find("changed_after_timing", str(e))
    except ReferenceFailed:
        return checker.findings
    if checker.mismatch is not None:
        checker.find("changed_after_timing", f"after timing, the output on {label} no longer matches the "
                                             f"reference ({checker.mismatch.note})")
    return checker.findings


def check_candidate(ctx: CheckContext) -> CheckReport:
    """Correctness and runtime integrity of one candidate (see the module docstring)."""
    checker = _Checker(ctx)
    try:
        report = checker.run()
    except CandidateFailed as e:
        status = e.status
        if any(f.severity == "reject" for f in checker.findings):
            status = Status.REJECTED
        return CheckReport(status=status, correct=False, mismatch=checker.mismatch,
                           findings=checker.findings, message=str(e))
    except ReferenceFailed as e:
        return CheckReport(status=Status.RUNTIME_ERROR, correct=False, findings=checker.findings, message=str(e))
    except Rejected:
        status, message = _verdict(checker.findings, checker.mismatch)
        return CheckReport(status=status, correct=False, mismatch=checker.mismatch, findings=checker.findings,
                           message=message)
    status, message = _verdict(checker.findings, checker.mismatch)
    report.status, report.correct, report.message = status, status is Status.OK, message
    report.findings, report.mismatch = checker.findings, checker.mismatch
    return report
