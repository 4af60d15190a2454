"""The checked calls of one evaluation, in the judge: which input sets, in what order, and what
each call must satisfy.

  get_inputs#0             a fresh draw (secret seed), then at once
  get_inputs#0 (rerun)     the same values again: freed memory holds the other poison marker, so an
                           output that reads uninitialized memory changes
  get_inputs#1..N-1        more fresh draws
  signed-normal            another distribution where the reference stays finite
                           (positive-normal where the reference needs x >= 0)
  heavy-tailed             for tiny outputs (losses, scalar reductions)
  large-magnitude x30/x100 floating inputs scaled, where the reference stays finite
  wide-integers            integer inputs across a range past 32 bits, where the reference accepts it
  unseen-shape             sizes the candidate was never shown (a second ModelNew when its init differs)

Every set: the judge computes its float64 yardstick and its own reference output for the call's
seed (on a copy: the reference may change its inputs), writes the inputs as drawn into the shared
input buffers once the sandbox is armed for the call, right before the Go (nothing of a set reaches
the sandbox earlier; a set over LARGE_INPUT_BYTES on CUDA is written first, its yardstick taken from
that copy, with the sandbox stopped until the call: CheckRun.check_set), then checks the reply: the sandbox's early
notes, OS threads left running, the input buffers unchanged, the output's structure, types,
density and aliasing, the values against the reference (tolerances and the whole-output bound),
precision against float64, and, for a wrong output, whether it is an earlier call's output
(stale: cached). The first reject-level finding ends the run.

One call with every custom kernel run on garbage comes before timing, and a run of them takes
the place of a timed run chosen at random among the timed runs (rounds.py): an output still
mostly right was mostly PyTorch's (judge_garbage_run). Where the output is a reduction to a few
elements, the garbage goes only into the bulk a kernel was handed (its tensors of more than
bulk_threshold elements), so a kernel that only finished PyTorch's reduction meets real values and
its output is right. After timing, runs with every custom
kernel skipped, then raising: an output that is still right means the kernels did no necessary
work; then skipped with their tensors spoiled: an output still mostly right was mostly PyTorch's
(check_kernels_did_the_work).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import torch

from htam_engine.evaluate.channel import Channel, Staged, Staging, fresh_seed
from htam_engine.evaluate.checks.compare import compare_outputs, flatten, fraction_right, noise_norm, runs, tensors
from htam_engine.evaluate.checks.inputs import (LARGE_SCALES, columns_apart, draw, has_floats, has_integers,
                                                heavy_tailed, large_magnitude, other_stream, rows_apart, shifted_down,
                                                signed_normal, sparse_negatives, sparse_spikes,
                                                sparse_wide_integers, wide_integers)
from htam_engine.evaluate.checks.memory import clone_inputs, same_values, tensor_leaves
from htam_engine.evaluate.checks.observe import (Observations, candidate_output, check_mutation, check_native_threads,
                                                 check_precision, nonfinite, output_fingerprint, record_notes)
from htam_engine.evaluate.checks.rounded import check_rounded_operands
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.kernel_switch import GARBAGE, RAISE, SKIP, SPOIL, KernelMode
from htam_engine.evaluate.oom import out_of_memory_text
from htam_engine.evaluate.reference import LARGE_INPUT_BYTES, ReferenceFailed, ReferenceModel, input_bytes
from htam_engine.evaluate.shared import Layout
from htam_engine.evaluate.stages import Stage
from htam_engine.problems.loader import LoadedProblem

# Outputs this small (elements) are losses / scalar reductions: add a heavy-tailed set.
TINY_OUTPUT = 16
# With every tensor a kernel was handed spoiled (kernel_switch.SPOIL), PyTorch made whatever is
# still right; from this share of the output on, the kernels did the lesser part of the work.
# An honest kernel that writes its output, or finishes a library op's in place, is handed all of
# it and leaves ~0 % right; a kernel of one row in four leaves 75 %. The same share of the
# numbers that depend on the inputs, with every kernel run on garbage (kernel_switch.GARBAGE):
# an honest kernel then writes garbage (a ReLU's is right only where it and the reference both
# happen to be zero, a sixth of those numbers), a probe kernel beside PyTorch's work leaves it all,
# and so does a kernel that only copies what PyTorch computes from or computed.
MOSTLY_PYTORCH = 0.75


def bulk_threshold(output_elements: int, input_tensor_elements: list[int]) -> int:
    """Where the output is a reduction to few elements (TINY_OUTPUT at most: a loss, a total) of inputs
    far larger: the size in elements above which a tensor a kernel was handed is "the bulk" and gets
    garbage in the work check's run on garbage, the smaller ones keeping their real values
    (kernel_switch's "on the bulk"); 0 elsewhere (garbage in every tensor).

    On an output of one element the share still right is all or nothing, and on garbage everywhere a
    kernel that only scales PyTorch's one-element sum writes garbage as an honest reduction kernel does
    (cheat_scalar_tail_mse: ok at 1.05x eager on mse 1024 x 4096 before this). A reduction of n elements done in
    two passes, PyTorch's and then a kernel's, splits as a x n / a: the kernel did the lesser pass when
    what it reads holds fewer than sqrt(n) elements, so that is the bound (at least the output's size
    and TINY_OUTPUT: a kernel reading a tensor of the output's size only finishes it). A kernel
    reducing a library product over its whole result (a matmul's M x N) reads more than that and
    stays honest. Not where no input tensor is above the bound (inputs of a few elements: nothing
    there is the bulk, and an honest kernel would meet only real values)."""
    if output_elements > TINY_OUTPUT or not input_tensor_elements:
        return 0
    bound = max(TINY_OUTPUT, output_elements, math.isqrt(sum(input_tensor_elements)))
    return bound if max(input_tensor_elements) > bound else 0


class CandidateFailed(Exception):
    """ModelNew raised (or its construction did); str() is one line naming the input set."""

    def __init__(self, message: str, kind: str = "runtime_error"):
        super().__init__(message)
        self.kind = kind


class HarnessFault(Exception):
    """The harness could not evaluate: says nothing about the candidate."""


class Stop(Exception):
    """A reject-level finding was recorded: the verdict is settled."""


def noise_of(ref_out: Any, exact: Any) -> Callable[[str], float | None]:
    """noise(path) = ||ref - exact|| for that leaf (the reference's own rounding noise)."""
    if exact is None:
        return lambda path: None
    e = {leaf.path: leaf.value for leaf in flatten(exact)}
    r = {leaf.path: leaf.value for leaf in flatten(ref_out)}
    return lambda path: noise_norm(r.get(path), e[path]) if path in e and path in r else None


def _numel(out: Any) -> int:
    return sum(t.numel() for t in tensors(out)) + sum(1 for leaf in flatten(out) if isinstance(leaf.value, (int, float)))


# Two runs on the same inputs may differ by a run-to-run reordering (atomics on a GPU), never by
# what stale memory held: atol = rtol at most this, by dtype (the configured tolerance if tighter).
REPEAT_TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-4, "bfloat16": 1e-4, "float64": 1e-7}


def _uniform(out: Any) -> bool:
    """Every element of every tensor leaf the same value (a constant, whatever the inputs)."""
    leaves = tensors(out)
    return bool(leaves) and all(t.numel() <= 1 or _all_equal_to(t, t[(0,) * t.dim()]) for t in leaves)


def _all_equal_to(t: torch.Tensor, first: torch.Tensor) -> bool:
    return all(bool((run == first).all()) for _, (run,) in runs(t))


def reference_first(reference: ReferenceModel, values: list[Any], seed: int, label: str,
                    yardstick: bool) -> tuple[Any, Any, list[Any], list[Layout], set[int]]:
    """The judge's own work on an input set before any of it reaches a sandbox: the float64
    yardstick (when asked: from inputs the reference has not modified yet), a pristine copy of the
    inputs, the reference output (the reference may modify its inputs in place), and the tensor
    inputs the reference changed. Returns (exact, ref_out, pristine, layouts, changed positions).

    At most three input-sized buffers of the judge's are alive at a time besides the shared ones:
    `values` and its float64 transient (freed inside reference.exact), then `values` and `pristine`."""
    exact = reference.exact(values, seed) if yardstick else None
    layouts = [Layout.of(t) for t in tensor_leaves(values)]
    pristine = clone_inputs(values)
    ref_out = reference.outputs(values, seed, label)
    return exact, ref_out, pristine, layouts, changed_inputs(values, tensor_leaves(pristine))


def changed_inputs(values: list[Any], pristine: list[torch.Tensor]) -> set[int]:
    """Positions of the tensor inputs the reference changed (`pristine`: their leaves as drawn)."""
    return {i for i, (now, before) in enumerate(zip(tensor_leaves(values), pristine)) if not same_values(now, before)}


def stage_first(values: list[Any], device: str) -> bool:
    """Whether a set is large enough on CUDA to be staged before the judge's own work on it
    (CheckRun.check_set): the bytes where reference.py returns the allocator's cached blocks too."""
    return device.startswith("cuda") and input_bytes(values) > LARGE_INPUT_BYTES


def same_init(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and same_values(x, y)):
                return False
        elif x != y:
            return False
    return True


@dataclass(frozen=True)
class RunSet:
    """A kind of checked set the reference accepted, for the timed stage's run of them: its label,
    and its values from a seed (the same for the same seed)."""

    label: str
    make: Callable[[int], list[Any]]


@dataclass(frozen=True)
class ReferenceFacts:
    """What later sets need to know of the first set's reference output (the output itself is
    released: one set and its reference outputs at a time)."""

    finite: bool
    numel: int


@dataclass
class SetResult:
    out: Any  # the candidate's output (views of the shared buffers: valid until the next call)
    ref_out: Any
    exact: Any
    seed: int  # the call's seed
    input_elements: list[int]  # the elements of each tensor input


class CheckRun:
    """The checked calls of one evaluation against one candidate sandbox."""

    def __init__(self, channel: Channel, loaded: LoadedProblem, reference: ReferenceModel, config: EvalConfig,
                 obs: Observations, device: str, let_timers_in: Callable[[], None] = lambda: None):
        """let_timers_in: called before each set's work, where the judge may let another judge's
        waiting timed run have the device (devicelock.DeviceLock.let_timers_in)."""
        self.channel = channel
        self.let_timers_in = let_timers_in
        self.loaded = loaded
        self.reference = reference
        self.cfg = config
        self.obs = obs
        self.device = device
        self.prints: list[tuple[str, tuple[float, ...]]] = []  # every right output so far, for the stale rule
        self.constant: set[tuple[float, ...]] = set()  # right outputs two different input sets both got
        self.reference_mutates = False
        # The kinds of checked set the reference accepted (large magnitude at its largest finite scale,
        # sparse spikes, shifted down, wide integers): the timed stage draws them again in a run of its own, in a timed
        # run's slots and pattern (rounds.TimedRounds._checked_run).
        self.run_sets: list[RunSet] = []
        self.timing_noise: dict[str, float | None] = {}
        self.last_out: Any = None  # the candidate's output on the latest call (None: not comparable)
        self.extension_ops = False  # the build registered torch.ops operators (their calls are not counted)
        self.launched = 0  # custom-kernel calls of the first call that made any
        # The runs on garbage put garbage only in tensors of more elements than this (0: in all):
        # bulk_threshold, from the first set (run)
        self.garbage_above = 0

    # ------------------------------------------------------------------ one call
    def check_set(self, label: str, make: Callable[[], list[Any]], reference: ReferenceModel, model_id: str = "main",
                  finite_only: bool = False, kernelbench_set: bool = False) -> SetResult | None:
        """Candidate on the set make() draws (the same values each time it is called) against the
        judge's reference; None when finite_only and the reference's output is not finite there
        (no call is made). kernelbench_set: drawn as KernelBench draws them, and judged by its
        per-element rule alone; htam's further sets also accept an element as close to float64
        as the reference is (compare.py)."""
        self.let_timers_in()
        seed = fresh_seed()
        values = make()
        if stage_first(values, self.device):
            # Staged first, the yardstick taken from the staged copy and the set drawn again for the
            # reference: the judge then holds the shared buffer and the float64 copy (3x the set) at
            # its peak, not those and its own draw (4x: 45_Average_Pooling_2D's 16 GiB set on the
            # H200). The sandbox is stopped meanwhile: nothing of the set reaches it before the call.
            with self.channel.sandbox.paused():
                staged = self.channel.stage_inputs(values, Staging.NOW_COLD)  # stopped: no warm-up (too large for one anyway)
                del values
                exact = reference.exact(staged.values(), seed)
                values = make()
                ref_out = reference.outputs(values, seed, label)
                ref_changed = changed_inputs(values, staged.views)
        else:
            exact, ref_out, pristine, layouts, ref_changed = reference_first(reference, values, seed, label, True)
            staged = self.channel.stage_inputs(pristine, Staging.AFTER_WARM_UP, layouts)  # written right before the Go
            del pristine
        if finite_only and nonfinite(ref_out):
            return None
        self.reference_mutates |= bool(ref_changed)
        result = self.channel.call(staged, model_id, ref_out, seed, Stage.CHECK)
        self.verify_call(result, values, ref_out, label, ref_changed)
        out = self.last_out
        if out is not None:
            m = compare_outputs(out, ref_out, self.cfg.tolerances, label, noise_of(ref_out, exact),
                                None if kernelbench_set else exact)
            if m is None and not self.obs.has("lower_precision"):
                measured = check_precision(out, ref_out, exact, label, self.obs)
                if not ref_changed:  # the rounded runs need the inputs as the reference got them
                    check_rounded_operands(out, ref_out, exact, measured, reference, values, seed, label, self.obs)
            self.note_stale(out, m, label)
            self.obs.note_mismatch(m)
        if self.obs.rejected:
            raise Stop()
        return SetResult(out, ref_out, exact, seed, [t.numel() for t in tensor_leaves(values)])

    def verify_call(self, result: Any, values: list[Any], ref_out: Any, label: str, ref_changed: set[int]) -> None:
        """Everything about a call except its values: failure, notes, threads, inputs, the output's form."""
        reply = result.reply
        if not reply.ok:
            raise CandidateFailed(f"ModelNew.forward raised on {label}: {reply.message}", reply.kind)
        record_notes(result, label, self.obs)
        self.note_launches(reply.launches, label)
        if not self.device.startswith("cuda"):  # the CUDA driver starts and ends threads of its own
            check_native_threads(result, self.channel.sandbox.thread_count, label, self.obs)
        check_mutation(result, values, ref_changed, label, self.obs)
        self.last_out = candidate_output(result, ref_out, tensor_leaves(values), label, self.obs)

    def note_launches(self, launches: int, label: str) -> None:
        """A call that ran no custom kernel (as the sandbox counted them: advice, early and clear).
        Operators an extension registered are not counted: the work check covers them."""
        if self.extension_ops:
            return
        if launches == 0 and self.launched:
            self.obs.find("caching", f"forward on {label} ran no custom kernel where earlier calls ran "
                                     f"{self.launched}: the result came from a cache")
        elif launches == 0:
            self.obs.find("no_kernel", f"no custom kernel ran during forward on {label} (pure PyTorch, or a "
                                       "fallback around the kernel)")
        self.launched = self.launched or launches

    def note_stale(self, out: Any, mismatch: Any, label: str) -> None:
        """A wrong output equal to an earlier call's right output is a cached result, whatever the key.
        Only right outputs are remembered, and an output that does not depend on its inputs is not a
        result to cache (a constant is wrong, not stale): one every element of which is the same
        value, or one two different input sets both got right."""
        fp = output_fingerprint(out)
        if mismatch is None:
            if any(p == fp for _, p in self.prints):
                self.constant.add(fp)
            self.prints.append((label, fp))
            return
        earlier = next((lab for lab, p in self.prints if p == fp), None)
        if earlier is not None and fp not in self.constant and not _uniform(out):
            self.obs.find("caching", f"the output on {label} is the one it returned for {earlier}, not one for "
                                     "these inputs: results are cached (by address, content or call count)")

    # ------------------------------------------------------------------ the sequence
    def run(self, init: list[Any]) -> None:
        main = self.loaded.main
        n = max(2, int(self.cfg.correctness_trials))
        facts: ReferenceFacts | None = None
        for k in range(n):
            label = f"get_inputs#{k}"
            seed = fresh_seed()
            res = self.check_set(label, functools.partial(draw, main.get_inputs, seed), self.reference,
                                 kernelbench_set=True)
            if k == 0:
                facts = ReferenceFacts(not nonfinite(res.ref_out), _numel(res.ref_out))
                self.garbage_above = bulk_threshold(facts.numel, res.input_elements)
                self.timing_noise = {leaf.path: noise_of(res.ref_out, res.exact)(leaf.path)
                                     for leaf in flatten(res.ref_out)}
                self.check_uninitialized(label, seed, res)
            del res  # before the next set is drawn
        assert facts is not None
        self.check_other_distributions(facts)
        self.check_far_values()
        self.check_wide_integers(facts)
        self.check_unseen_shape(init)

    def check_uninitialized(self, label: str, seed: int, first: SetResult) -> None:
        """Same inputs and call seed again, other garbage in freed memory: the output must not change."""
        if first.out is None:
            return
        before = [t.clone() for t in tensors(first.out)]
        self.let_timers_in()
        again_label = f"{label} (rerun)"
        values = draw(self.loaded.main.get_inputs, seed)
        staged = self.channel.stage_inputs(values, Staging.AFTER_WARM_UP)
        ref_out = first.ref_out
        result = self.channel.call(staged, "main", ref_out, first.seed, Stage.CHECK)  # random ops draw alike
        self.verify_call(result, values, ref_out, again_label, set() if not self.reference_mutates else
                         set(range(len(staged.views))))
        if self.last_out is not None:
            first_out = _with_leaves(first.out, before)
            strict = {k: min(v, REPEAT_TOLERANCES.get(k, v)) for k, v in self.cfg.tolerances.items()}
            m = compare_outputs(self.last_out, first_out, strict, again_label)
            if m is not None:
                self.obs.find("uninitialized_memory", f"two runs on the same {label} inputs differ ({m.note}): the "
                                                      "output depends on more than its inputs (it reads uninitialized "
                                                      "memory, which held other values the second time, or keeps "
                                                      "state from call to call)")
        if self.obs.rejected:
            raise Stop()

    def first_accepted(self, sets: list[tuple[str, Callable[[], list[Any]]]], finite_only: bool) -> int | None:
        """Check the first of `sets` the reference accepts (raises on none, stays finite where it was);
        its index, or None where it accepted none."""
        for index, (label, make) in enumerate(sets):
            try:
                if self.check_set(label, make, self.reference, finite_only=finite_only) is not None:
                    return index
            except ReferenceFailed:
                continue
        return None

    def check_other_distributions(self, facts: ReferenceFacts) -> None:
        if not self.cfg.check_other_distribution or not self._has(has_floats):
            return
        finite_only = facts.finite
        seed = fresh_seed()
        get_inputs = self.loaded.main.get_inputs

        # Each maker draws the same values every time it is called (check_set may draw a set twice).
        def normal(draw_seed: int) -> list[Any]:
            return signed_normal(draw(get_inputs, draw_seed), seed)

        def positive(draw_seed: int) -> list[Any]:
            return [x.abs_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in normal(draw_seed)]

        self.first_accepted([("signed-normal", functools.partial(normal, fresh_seed())),
                             ("positive-normal", functools.partial(positive, fresh_seed()))], finite_only)
        if facts.numel <= TINY_OUTPUT:
            tail_seed = fresh_seed()

            def tailed(draw_seed: int, positive: bool) -> list[Any]:
                return heavy_tailed(draw(get_inputs, draw_seed), tail_seed, positive=positive)
            self.first_accepted([("heavy-tailed", functools.partial(tailed, fresh_seed(), False)),
                                 ("heavy-tailed (positive)", functools.partial(tailed, fresh_seed(), True))],
                                finite_only)

    def check_far_values(self) -> None:
        """The floating sets of values far from get_inputs' own: large magnitude, sparse spikes, sparse
        negatives, shifted down, rows apart, columns apart (inputs.py). Each kind the reference stays finite on joins
        run_sets (of the large magnitudes, the largest)."""
        if not self.cfg.check_other_distribution or not self._has(has_floats):
            return
        get_inputs = self.loaded.main.get_inputs

        def scaled(scale: float, seed: int) -> list[Any]:
            return large_magnitude(draw(get_inputs, seed), scale)

        def spiked(seed: int) -> list[Any]:  # where the spikes go: a stream of its own, not the draw's
            return sparse_spikes(draw(get_inputs, seed), other_stream(seed))

        def dipped(seed: int) -> list[Any]:
            return sparse_negatives(draw(get_inputs, seed), other_stream(seed))

        def shifted(seed: int) -> list[Any]:
            return shifted_down(draw(get_inputs, seed), other_stream(seed))

        def apart(seed: int) -> list[Any]:
            return rows_apart(draw(get_inputs, seed), other_stream(seed))

        def spread(seed: int) -> list[Any]:
            return columns_apart(draw(get_inputs, seed), other_stream(seed))

        large = [self._finite_kind(f"large-magnitude x{scale:g}", functools.partial(scaled, scale))
                 for scale in LARGE_SCALES]
        kinds = [next((k for k in reversed(large) if k is not None), None),
                 self._finite_kind("sparse spikes", spiked), self._finite_kind("sparse negatives", dipped),
                 self._finite_kind("shifted down", shifted), self._finite_kind("rows apart", apart),
                 self._finite_kind("columns apart", spread)]
        self.run_sets += [k for k in kinds if k is not None]

    def _finite_kind(self, label: str, make: Callable[[int], list[Any]]) -> RunSet | None:
        """make(a fresh seed) checked where the reference accepts it and stays finite on it; then the
        kind, for the timed stage's runs of checked sets, else None."""
        try:
            if self.check_set(label, functools.partial(make, fresh_seed()), self.reference, finite_only=True) is None:
                return None
        except ReferenceFailed:
            return None
        return RunSet(label, make)

    def check_wide_integers(self, facts: ReferenceFacts) -> None:
        if not self.cfg.check_other_distribution or not self._has(has_integers):
            return
        seed = fresh_seed()

        def wide(positive: bool, widen: Callable[..., list[Any]]) -> Callable[[], list[Any]]:
            draw_seed = fresh_seed()
            probed = not self.device.startswith("cuda")

            def make() -> list[Any]:  # the same values each call, tried on the host the first time only
                nonlocal probed
                values = widen(draw(self.loaded.main.get_inputs, draw_seed), seed, positive=positive)
                if not probed:
                    self.probe_on_host(values)
                    probed = True
                return values
            return make

        # wide everywhere, then a few wide values among get_inputs' own (a sample sees none of them)
        for name, widen in (("wide-integers", wide_integers), ("sparse wide-integers", sparse_wide_integers)):
            sets = [(name, wide(False, widen)), (f"{name} (positive)", wide(True, widen))]
            accepted = self.first_accepted(sets, finite_only=facts.finite)
            if accepted is not None:  # drawn again as accepted: other values could end the judge's CUDA context
                label, make = sets[accepted]
                self.run_sets.append(RunSet(label, lambda _seed, make=make: make()))

    def probe_on_host(self, values: list[Any]) -> None:
        """On CUDA, a wide-integer set reaches the judge's reference only once a CPU copy of it
        accepted the set: integers a kernel indexes with end out of range in a device-side
        assert, which would end the judge's CUDA context (reference.accepts_on_host).
        ReferenceFailed where it refused them or was too large to try."""
        accepted = self.reference.accepts_on_host(values, fresh_seed())
        if accepted is None:  # named once however many sets it skips (Observations.find)
            self.obs.find("wide_integers_skipped", "no wide-integer set: on CUDA the reference must accept it on "
                                                   "the CPU first (a device-side assert would end the judge's "
                                                   "context), and this model and its inputs are too large to try "
                                                   "there", "warn")
        if not accepted:
            raise ReferenceFailed("the reference refuses the wide-integer set")

    def _has(self, kind: Callable[[list[Any]], bool]) -> bool:
        """Whether get_inputs' tensors include that kind (read from their layouts, or one draw)."""
        layouts = self.loaded.input_layouts
        if layouts is not None:
            return kind([torch.empty(0, dtype=dtype) if 0 in shape else torch.empty((1,), dtype=dtype)
                         for shape, _stride, dtype in layouts])
        return kind(draw(self.loaded.main.get_inputs, fresh_seed()))

    def check_unseen_shape(self, init: list[Any]) -> None:
        loaded = self.loaded
        if not self.cfg.check_unseen_shape:
            return
        if loaded.unseen is None:
            if loaded.unseen_overrides is None and loaded.unseen_note.startswith("the problem failed"):
                self.obs.find("unseen_shape_skipped", f"no unseen-shape set: {loaded.unseen_note}", "warn")
            return
        overrides = dict(loaded.unseen_overrides or {})
        draw_seed = fresh_seed()
        try:
            v_init = list(loaded.unseen.get_init_inputs())
            values = draw(loaded.unseen.get_inputs, draw_seed)
        except Exception as e:  # noqa: BLE001 - the problem's fault under these sizes
            self.obs.find("unseen_shape_skipped", f"no unseen-shape set: the problem failed under {overrides}: "
                                                  f"{type(e).__name__}: {e}", "warn")
            return
        reference, model_id = self.reference, "main"
        if not same_init(v_init, init):  # the sizes touched construction too: a new pair of models
            try:
                reference = ReferenceModel(loaded.unseen.Model, v_init, self.cfg.seed, self.device)
            except ReferenceFailed as e:
                self.obs.find("unseen_shape_skipped", f"no unseen-shape set: {e}", "warn")
                return
            model_id = "variant"
            self.construct(model_id, v_init)
        shapes = [list(x.shape) for x in tensor_leaves(values)]
        del values  # drawn again by check_set: one copy of the set at a time
        label = "unseen-shape"
        try:
            self.check_set(label, functools.partial(draw, loaded.unseen.get_inputs, draw_seed), reference, model_id)
        except CandidateFailed as e:
            if out_of_memory_text(str(e)):
                raise  # the device's memory, not the shapes: the judge runs it again alone (judge._check)
            self.obs.find("shape_specialized", f"fails on input shapes it was not shown {shapes} ({overrides}): {e}",
                          "incorrect")
            return
        except ReferenceFailed as e:
            self.obs.find("unseen_shape_skipped", f"no unseen-shape set: {e}", "warn")
            return
        if self.obs.mismatch is not None and self.obs.mismatch.input_set == label:
            self.obs.find("shape_specialized", f"wrong on input shapes it was not shown {shapes} ({overrides})",
                          "incorrect")

    def construct(self, model_id: str, init: list[Any]) -> list[Any]:
        """ModelNew(*init) in the sandbox under the construction seed; its parameter fingerprints."""
        from htam_engine.evaluate import wire

        reply = self.channel.request(wire.Construct(self.channel.next_seq(), model_id, init, self.cfg.seed),
                                     Stage.CHECK, deadline_s=None)
        if not isinstance(reply, wire.Outcome) or not reply.ok:
            raise CandidateFailed(getattr(reply, "message", "construction failed"), getattr(reply, "kind", ""))
        return reply.params

    # ------------------------------------------------------------------ before and after timing
    def check_kernels_before_timing(self) -> None:
        """One call with every custom kernel run on garbage, before the timed rounds (the rest of the
        work check follows them). A candidate that tells the work check's first run (kernels skipped:
        a probe's flag left unwritten) and from then on runs its kernels honestly had PyTorch do
        every checked and timed call's work and passed the work check with its kernels (red-team
        pass 8, cheat_latch_on_skip). On garbage its probe still writes the flag, so it lets PyTorch
        compute from the real inputs here and the share still right convicts it; a candidate that
        latches the other way, honest until the work check, meets the run on garbage among the timed
        runs."""
        self.judge_garbage_run(self._run_with_kernels(GARBAGE, 1))

    def check_kernels_did_the_work(self, run_length: int = 1) -> None:
        """After the timed rounds, among which a run with every kernel run on garbage took the place
        of a timed run (judge_garbage_run, rounds.TimedRounds._time_rounds): two runs with every
        custom kernel skipped, then raising (a right output convicts them), and last one with every
        tensor a kernel was handed spoiled: an output mostly still right was mostly PyTorch's
        (MOSTLY_PYTORCH). Each is a run of `run_length` calls, as long as the timed runs
        (rounds.trials_per_run), so a candidate cannot keep its kernels for runs of one call and let
        PyTorch do the timed runs' work; any call of a run convicts. Garbage comes before these
        because a candidate cannot tell it from a real call inside the call (its probe still
        writes), while it can tell a skipped run (its probe's flag unwritten): one that let PyTorch
        time its runs and turned honest at the first skipped run would otherwise have passed every
        later run."""
        for mode in (SKIP, RAISE):
            noise = lambda path: self.timing_noise.get(path)  # noqa: E731
            right = [label for out, ref_out, label in self._run_with_kernels(mode, run_length)
                     if compare_outputs(out, ref_out, self.cfg.tolerances, label, noise) is None]
            if right:
                how = "a decoy launch while PyTorch does the work" if mode == SKIP else "a try/except fallback to PyTorch"
                self.obs.find("no_kernel", f"with every custom kernel {_KERNELS_OFF[mode]}, forward still returned "
                                           f"the right output ({len(right)} of {run_length} calls): the custom kernels "
                                           f"did no necessary work ({how})")
                return
        self._check_spoiled(run_length)

    def judge_garbage_run(self, usable: list[tuple[Any, Any, str]]) -> bool:
        """The outputs of a run with every kernel run on garbage (usable_outputs): what was still right
        (of the numbers that depend on the inputs) came from PyTorch, beside kernels whose writes do
        not depend on what they read (a probe's flag). True when it convicted. The caller holds none
        of the run's input sets any more: a run of one call draws another set here, for its reference.

        A run on garbage takes the place of a timed run chosen at random (rounds.py): the judge's
        calls come in a fixed order for a config, and while this run came right after the timed runs
        a candidate counting calls from the unseen-shape set's let PyTorch do exactly the timed calls
        and met it with its kernels (cheat_count_timed: ok at PyTorch's speed)."""
        if self.obs.has("no_kernel"):
            return True
        others = [ref_out for _, ref_out, _ in usable]
        if len(others) < 2:  # another set's reference, to tell the numbers that depend on the inputs
            others.append(self.reference.outputs(draw(self.loaded.main.get_inputs, fresh_seed()), fresh_seed(),
                                                 "a set beside the garbage run"))
        shares = [fraction_right(out, ref_out, self.cfg.tolerances, others[(k + 1) % len(others)])
                  for k, (out, ref_out, _) in enumerate(usable)]
        share = max(shares, default=0.0)
        if share >= MOSTLY_PYTORCH:
            # On an output of a few elements only the bulk got garbage (bulk_threshold): the message
            # says so, and names the one way more there is to be right then (finishing PyTorch's reduction).
            handed = (f"in every tensor of more than {self.garbage_above} elements it was handed (the bulk of a "
                      "reduction to a few elements; the smaller ones real, what it did not write put back)"
                      if self.garbage_above else
                      "(every tensor it was handed overwritten, what it did not write put back)")
            self.obs.find("no_kernel", f"with every custom kernel run on garbage {handed}, {share:.1%} of the "
                                       "output that depends on the inputs was still "
                                       "right: PyTorch computed it, and the kernels' writes do not depend on what "
                                       "they read (a probe kernel), copy it unchanged (a copy kernel), pass it on "
                                       "unchanged where the constants they were handed are real (a kernel scaling "
                                       "by ones) or are what PyTorch's operators computed (an extension calling "
                                       "ATen)" + (", or only finish what PyTorch reduced (a kernel scaling "
                                                  "PyTorch's sum)" if self.garbage_above else ""))
            return True
        return False

    def _check_spoiled(self, run_length: int) -> None:
        """The last run: every kernel skipped and every tensor it was handed spoiled; an output mostly
        still right was mostly PyTorch's."""
        shares = [fraction_right(out, ref_out, self.cfg.tolerances)
                  for out, ref_out, _ in self._run_with_kernels(SPOIL, run_length)]
        share = max(shares, default=0.0)
        if share >= MOSTLY_PYTORCH:
            self.obs.find("no_kernel", f"with every tensor a custom kernel was handed spoiled, {share:.1%} of the "
                                       "output was still right: PyTorch computed most of it, the custom kernels at "
                                       f"most {1 - share:.1%}")

    def _run_with_kernels(self, mode: KernelMode, run_length: int) -> list[tuple[Any, Any, str]]:
        """(the candidate's output, the reference's, the set's label) for each call of one run on
        fresh inputs with the custom kernels in `mode`, up to the first that failed or returned
        nothing usable."""
        self.let_timers_in()
        drawn = []
        for k in range(run_length):  # every set's reference first, then the run's staging (as the timed runs)
            label = kernels_off_label(mode, k, run_length)
            values, seed = draw(self.loaded.main.get_inputs, fresh_seed()), fresh_seed()
            _, ref_out, pristine, layouts, _ = reference_first(self.reference, values, seed, label, False)
            drawn.append((label, values, seed, ref_out, pristine, layouts))
        sets = [_KernelsOffCall(label, values, seed, ref_out,
                                self.channel.stage_inputs(pristine, Staging.AFTER_WARM_UP, layouts, slot=k))
                for k, (label, values, seed, ref_out, pristine, layouts) in enumerate(drawn)]
        del drawn  # each pristine copy lives on only until it is written
        results = self.channel.call_run([c.staged for c in sets], "main", [c.ref_out for c in sets],
                                        [c.seed for c in sets], Stage.CHECK, kernels=mode,
                                        garbage_above=self.garbage_above if mode is GARBAGE else 0)
        return self.usable_outputs(results, [(c.label, c.values, c.ref_out) for c in sets], mode)

    def usable_outputs(self, results: list[Any], calls: list[tuple[str, list[Any], Any]],
                       mode: KernelMode) -> list[tuple[Any, Any, str]]:
        """(the candidate's output, the reference's, the set's label) for each call of a run with the
        custom kernels in `mode` (`calls`: each call's label, inputs as drawn and reference output), up
        to the first that failed or returned nothing usable; the switch's notes on the candidate's
        Python run inside a kernel are findings, and so is a forward that raised on garbage
        (_raised_on_garbage)."""
        usable = []
        for result, (label, values, ref_out) in zip(results, calls):
            for note in result.reply.notes:  # what the switch saw on garbage (a kernel running the candidate's Python)
                if note.rule == "no_kernel":
                    self.obs.find("no_kernel", f"{note.message} (on {label})")
            if mode is GARBAGE and not result.reply.ok:
                self._raised_on_garbage(result.reply, label)
            out = candidate_output(result, ref_out, tensor_leaves(values), label, Observations()) \
                if result.reply.ok else None
            if out is None:
                break
            usable.append((out, ref_out, label))
        return usable

    def _raised_on_garbage(self, reply: Any, label: str) -> None:
        """A forward that raised with its kernels run on garbage, where every checked call returned: the
        run cannot tell whose work the output is, and a candidate that checks its own output (finite,
        in range, rows summing to one) and raises when it is wrong raised on every run of the work
        check and passed it, its kernels doing 0.8 % of the output beside PyTorch
        (cheat_validate_and_raise). Garbage is finite like real values and integers stay within their
        tensor's range, so an honest kernel computes on it; one whose kernels fail on values it was not
        shown (an index computed from a float) is turned down too. An out-of-memory there is no
        verdict (HarnessFault: run again alone in a pool, else the harness's error): its message is
        the candidate's to write, and excusing it passed the same cheat saying "CUDA out of memory"
        (cheat_oom_message, red-team pass 10: ok at 0.030x)."""
        if reply.kind != "runtime_error":
            return
        if out_of_memory_text(reply.message):  # the candidate's own words: no verdict either way
            raise HarnessFault(f"the run on garbage ran out of memory in the candidate's sandbox ({label}): whose work "
                               "the output is could not be checked (the harness's capacity, or a message the "
                               "candidate wrote; no verdict)")
        self.obs.find("no_kernel", f"forward raised with every custom kernel run on garbage ({label}: "
                                   f"{reply.message or 'no message'}), where every checked call returned: the run on "
                                   "garbage cannot tell whose work the output is (a forward checking its own output "
                                   "raises where the kernels' part is wrong)")


class _KernelsOffCall(NamedTuple):
    """One call of a work-check run, as the judge keeps it until the reply."""

    label: str
    values: list[Any]
    seed: int
    ref_out: Any
    staged: Staged


_KERNELS_OFF = {SKIP: "skipped", RAISE: "raising", GARBAGE: "run on garbage", SPOIL: "skipped and its tensors spoiled"}


def kernels_off_label(mode: KernelMode, k: int, run_length: int) -> str:
    """The label of call k of a run of `run_length` with every custom kernel in `mode`."""
    return f"get_inputs with custom kernels {_KERNELS_OFF[mode]}" + (f" (call {k + 1})" if run_length > 1 else "")


def _with_leaves(structure: Any, leaves: list[torch.Tensor]) -> Any:
    """`structure` with its tensor leaves replaced, in order, by `leaves` (kept copies)."""
    it = iter(leaves)

    def walk(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return next(it)
        if isinstance(x, (list, tuple)):
            return type(x)(walk(v) for v in x)
        if isinstance(x, dict):
            return {k: walk(x[k]) for k in x}
        return x

    return walk(structure)
