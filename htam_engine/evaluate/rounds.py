"""The timed part of an evaluation: the baselines prepared, rounds of candidate, eager and
torch.compile calls, the baselines timed alone afterwards, and the figures.

Each round draws fresh inputs (a secret seed) and computes the judge's reference output for them.
Rounds run in runs of up to TRIALS_PER_RUN calls back to back, as KernelBench's timing loop calls
a forward right after the one before (fewer where the sets are large: RUN_MAX_BYTES): the
candidate's sandbox is armed with the run's calls and warms up, then the judge writes the run's
inputs into its shared buffers and sends Go (channel.py); every output is verified against the
reference for its inputs. Then, with the candidate's whole process tree stopped, the same run goes
to the reference sandbox's eager and compiled models (their outputs verified as well). A run's
inputs are all in place before its first call, so a candidate could compute later calls' outputs
in an earlier one: one run is one sample, the mean of its calls, which counts such work wherever
it was done. A run more for each kind of checked set the reference accepted (large magnitude at its
largest finite scale, sparse spikes, shifted down, wide integers: sequence.CheckRun.run_sets), each in
a place drawn at random among the timed ones, has a set of its kind at every call, every output
verified as the checked sets are and no sample taken. The checked sets come one to a Go, in the
first call's slot, so a candidate telling a run's later calls apart (by their pace, by their
buffers' addresses) could serve the checked sets its full kernel and the timed calls, which
otherwise only ever see get_inputs' own draws, one that is wrong in general (a softmax without its
max pass: cheat_timed_nomax_softmax, cheat_slot_sampled_nomax_softmax; int64 on its low word:
cheat_slot_low_word_int).
Once the candidate's sandbox is gone the baselines are timed alone for a few more
runs; a baseline that was slower beside the candidate is replaced by its figure alone. The clock
rule (clock.py) compares the candidate's overhead with the reference sandbox's.

One run more than the trials make is the work check's run with every custom kernel run on
garbage, in the place of a timed run drawn at random (timed_stage_runs): drawn, staged, called,
followed by the baselines and held alone as a timed run is, so a candidate cannot tell it from
one by the order of the calls; it is no sample (sequence.CheckRun.judge_garbage_run judges it).
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

from htam_engine.evaluate import wire
from htam_engine.evaluate.channel import Channel, Staging, fresh_seed
from htam_engine.evaluate.checks.compare import compare_outputs, tensors
from htam_engine.evaluate.checks.inputs import draw
from htam_engine.evaluate.checks.memory import FRESH_MAPPING_BYTES, aliased_outputs, nbytes, tensor_leaves
from htam_engine.evaluate.checks.observe import (Observations, candidate_output, check_mutation, check_precision,
                                                 nonfinite, record_notes)
from htam_engine.evaluate.checks.rounded import check_rounded_operands
from htam_engine.evaluate.checks.sequence import (CandidateFailed, CheckRun, HarnessFault, RunSet, Stop,
                                                  kernels_off_label, noise_of, stage_first)
from htam_engine.evaluate.clock import (CpuSnapshot, clock_check, flush_check, fresh_memory_check, fresh_pages_check,
                                        hidden_cpu_check, judged_runtime, short_flush_check, spread, tail_check,
                                        thread_check)
from htam_engine.evaluate.kernel_switch import GARBAGE, RUN, KernelMode
from htam_engine.evaluate.proctree import rss_slack_bytes
from htam_engine.evaluate.reference import BaselineSandbox, ReferenceFailed, input_bytes
from htam_engine.evaluate.sandbox_client import SandboxError
from htam_engine.evaluate.stages import Stage
from htam_engine.problems.loader import LoadedProblem

# Baseline rounds timed alone after the candidate's sandbox is gone (at least; trials / 4 if more).
ALONE_MIN_ROUNDS = 3
# A baseline beside the candidate slower than alone by more than this (plus 3x its own relative
# spread) was disturbed.
DISTURBED_FRACTION = 0.15
# A baseline's output is accepted this far (atol = rtol) from the judge's reference: on the H200,
# torch.compile of 2/73 Conv2d_BatchNorm_Scaling and 2/85 Conv2d_GroupNorm missed 1e-4 on every
# trial, so the table had no torch.compile figure for them; wrong code is far beyond it.
BASELINE_TOLERANCE = 1e-2
# How long the judge waits, once the reference sandbox's turn ends, for it to finish its garbage
# collection before the candidate's tree runs again (reference_runs).
REFERENCE_IDLE_S = 2.0


def baseline_tolerances(tolerances: dict[str, float]) -> dict[str, float]:
    """The tolerances a baseline's output is held to: the candidate's, widened to BASELINE_TOLERANCE."""
    return {k: max(v, BASELINE_TOLERANCE) for k, v in tolerances.items()}
# Building, compiling and warming the reference sandbox's models may take this long.
BASELINE_PREP_S = 1800.0

# Timed trials whose output is also checked against the float64 yardstick, picked at random by the
# judge: a float64 forward per trial would hold the device's timing lock several times as long.
# The picked trial's yardstick is computed after its reply, so a call cannot tell it was picked.
PRECISION_TRIALS = 3

# Timed calls run back to back, up to this many in one run (wire.Arm / wire.Go): a forward right after
# the one before finds its host code warm, as in KernelBench's loop, where one after the sandbox
# waited for the judge runs it several times slower (tests/bench/cpu_cold_call.py), and on a GPU a
# launch path longer than the L2 flush before it is timed inside the events.
TRIALS_PER_RUN = 5
# ... while a run's input sets and outputs stay under this many bytes together (the judge, its
# reference and both sandboxes' buffers hold each of them at once); larger sets run one at a time.
RUN_MAX_BYTES = 256 << 20


# A stretch of timed runs expected to hold the device for at most this long takes it alone once,
# with the judge's work between its runs (devicelock.runs_alone); a longer one takes it per run.
STRETCH_ALONE_S = 2.0
# The judge's own time per run in that estimate (staging, the reference's outputs, comparing,
# stopping and continuing the candidate's tree): ~40-50 ms a run on the H200 for small sets.
RUN_OVERHEAD_S = 0.05


def stretch_s(calls: int, per_run: int, call_ms: list[float]) -> float:
    """How long `calls` rounds in runs of `per_run` hold the device, each round one call of every
    model whose latest call took `call_ms` (the judge's wall clock): the estimate runs_alone takes."""
    runs = -(-calls // max(1, per_run))
    return calls * sum(call_ms) / 1e3 + runs * len(call_ms) * RUN_OVERHEAD_S


def trials_per_run(set_bytes: int, out_bytes: int, trials: int) -> int:
    """How many calls one run makes for sets and outputs of these sizes (at most `trials`)."""
    return max(1, min(TRIALS_PER_RUN, trials, RUN_MAX_BYTES // max(1, set_bytes + out_bytes)))


def runs_of(first: int, count: int, per_run: int) -> list[range]:
    """Round indexes first .. first + count - 1 in runs of at most per_run."""
    return [range(i, min(i + per_run, first + count)) for i in range(first, first + count, per_run)]


def garbage_place(timed_runs: int) -> int:
    """Before which of `timed_runs` timed runs the work check's run on garbage comes (`timed_runs`:
    after the last), at random, every place alike. A candidate counting calls knows how many runs
    the timed stage makes, not which of them is the run on garbage: PyTorch on k of them is met
    there with probability k / (timed_runs + 1), on all of them always."""
    return secrets.randbelow(timed_runs + 1)


def checked_place(runs: int) -> int:
    """Before which of the timed stage's `runs` runs after the warm-up (the timed runs and the run on
    garbage) the run of checked sets comes (`runs`: after the last), at random, every place alike."""
    return secrets.randbelow(runs + 1)


def timed_stage_runs(warmup: int, trials: int, per_run: int) -> list[range | None]:
    """The runs of the timed stage in order: the warm-up runs, then the timed runs with the work
    check's run on garbage (None) in the place garbage_place draws, one run more than the trials
    make, so the trials stay the config's. Never among the warm-up runs: they are no sample to
    protect, and before them the judge still holds round 0's set (_time_rounds)."""
    warm, timed = runs_of(0, warmup, per_run), runs_of(warmup, trials, per_run)
    place = garbage_place(len(timed))
    return [*warm, *timed[:place], None, *timed[place:]]


@dataclass(frozen=True)
class CheckedRun:
    """A run of the timed stage with a checked set of one kind at every call (TimedRounds._checked_run),
    beside the warm-up and timed runs and the run on garbage (None in timed_stage_runs' list)."""

    kind: RunSet


class Trial(NamedTuple):
    """One run of timed calls as the judge keeps it: one sample."""

    wall_ms: float  # the judge's clock, Go to reply, over the run's calls
    ms: float  # the mean of the sandbox's reports
    tail_ms: float  # the mean device work after the end event (timing.run_trial; 0 on the CPU)
    flush_ms: float  # the mean L2 flush before the start event (timing.run_trial; 0 on the CPU)
    busy_threads: int | None  # the sandbox's threads that ran a share of the run (channel.py; CPU only)
    calls_ms: tuple[float, ...] = ()  # each call's report
    faults: float | None = None  # the sandbox's minor page faults per call, read by the judge (CPU only)
    anon_growth: float | None = None  # the growth of its resident anonymous memory, bytes per call (CPU only)
    huge_pages: bool | None = None  # whether huge pages could serve the sandbox at the run's end (CPU only)

    @classmethod
    def of(cls, results: list[Any]) -> "Trial":
        calls = tuple(res.reply.ms for res in results)
        return cls(results[0].wall_ms, statistics.fmean(calls), statistics.fmean(res.reply.tail_ms for res in results),
                   statistics.fmean(res.reply.flush_ms for res in results), results[0].busy_threads, calls,
                   results[0].faults, results[0].anon_growth, results[0].huge_pages)


@dataclass(slots=True)
class RoundSet:
    """One round's input set as the judge holds it, and its reference output."""

    index: int
    label: str
    timed: bool
    draw_seed: int
    seed: int
    values: list[Any] | None
    exact: Any  # the float64 yardstick, where the reference changes its inputs (needed first) or a checked set's; else None
    ref_out: Any
    # A checked set's kind among a run's calls (TimedRounds._checked_run): how to make its values again
    # (for the yardstick, TimedRounds._yardstick); compared as the checked sets are, and no sample.
    remake: Callable[[], list[Any]] | None = None


Samples = dict[str, list[Trial]]  # model -> its timed trials


def clocked(trials: list[Trial]) -> list[tuple[float, float]]:
    """(judge wall ms, reported ms) per trial, as clock.py's rules take them."""
    return [(t.wall_ms, t.ms) for t in trials]


class TimedRounds:
    """The timed part of Evaluation (judge.py), which holds the state it uses."""

    def _prepare_baselines(self, loaded: LoadedProblem, init: list[Any]) -> BaselineSandbox | None:
        """The reference sandbox built, compiled and warmed, outside the exclusive timing lock."""
        try:
            return self._prepare_baselines_now(loaded, init)
        except SandboxError as e:
            if self.judge.baseline is not None:
                self.judge.baseline.close()
            self.judge.baseline = None
            raise HarnessFault(f"the reference sandbox failed: {e}") from None

    def _prepare_baselines_now(self, loaded: LoadedProblem, init: list[Any]) -> BaselineSandbox | None:
        judge, cfg, r = self.judge, self.cfg, self.result
        t0 = time.perf_counter()
        judge.stage(Stage.BASELINE)
        r.stages.reference_reused = judge.baseline is not None and judge.baseline.problem_key == loaded.key \
            and judge.baseline.alive()
        bs = judge.baseline_for(loaded, cfg, init)
        channel = self.baseline_channel = Channel(bs.sandbox, self.device, 0.0, None)
        channel.reserve_inputs(loaded.input_layouts)
        if cfg.time_compile_baseline and "compiled" not in bs.models and not bs.compile_note:
            reply = channel.request(wire.Construct(channel.next_seq(), "compiled", [], cfg.seed, compiled=True,
                                                   of="eager"), Stage.BASELINE, BASELINE_PREP_S)
            if reply.ok:
                bs.models.add("compiled")
                # torch.compile compiles on this first call: 10-25 s of CPU work for a KernelBench
                # problem on the H200, done outside the device lock like a candidate's build. Under
                # the check lock it held up every other judge's timing for that long.
                self._warm_baseline(bs, "compiled")
            else:
                bs.compile_note = reply.message
        with judge.lock.checking():
            for model_id in self._baseline_models(bs):
                self._warm_baseline(bs, model_id)
        bs.evaluations += 1
        r.stages.baseline_s = time.perf_counter() - t0
        return bs

    def _warm_baseline(self, bs: BaselineSandbox, model_id: str) -> None:
        """One call of a baseline on fresh inputs, its output unchecked (a warm-up)."""
        assert self.baseline_channel is not None
        loaded = self.loaded
        values = draw(loaded.main.get_inputs, fresh_seed())
        seed = fresh_seed()
        staged = self.baseline_channel.stage_inputs(values, Staging.AFTER_WARM_UP)
        ref_out = self.reference.outputs(values, seed, "a baseline warm-up")
        res = self.baseline_channel.call(staged, model_id, ref_out, seed, Stage.BASELINE)
        if not res.reply.ok and model_id == "compiled":
            bs.models.discard("compiled")
            bs.compile_note = res.reply.message
        elif not res.reply.ok:
            raise HarnessFault(f"the eager baseline failed: {res.reply.message}")

    def _baseline_models(self, bs: BaselineSandbox) -> list[str]:
        wanted = ["eager"] + (["compiled"] if self.cfg.time_compile_baseline else [])
        return [m for m in wanted if m in bs.models]

    def _time(self, checks: CheckRun, bs: BaselineSandbox | None) -> tuple[Samples, int]:
        """Rounds of candidate, eager and compiled calls on fresh inputs; every candidate trial's
        output verified against the judge's reference for that trial's inputs, and the precision of
        PRECISION_TRIALS of them against the float64 yardstick as on the checked calls. Returns the (judge wall ms,
        reported ms) samples per model and the output's bytes."""
        assert self.channel is not None
        try:
            return self._time_rounds(checks, bs)
        finally:
            self.reference.drop_exact()  # the float64 copy lives only while calls are verified

    def _time_rounds(self, checks: CheckRun, bs: BaselineSandbox | None) -> tuple[Samples, int]:
        assert self.channel is not None
        judge, cfg, r = self.judge, self.cfg, self.result
        judge.stage(Stage.TIME)
        t0 = time.perf_counter()
        models = self._baseline_models(bs) if bs is not None else []
        samples: Samples = {"main": [], **{m: [] for m in models}}
        progress: list[float] = []  # the candidate's timed calls not yet sent to the engine
        last_sent = time.monotonic()
        warmup, trials = max(0, int(cfg.warmup)), max(1, int(cfg.trials))
        picked = set(secrets.SystemRandom().sample(range(warmup, warmup + trials), min(PRECISION_TRIALS, trials)))
        # The engine's live trial times start over: an earlier timing of this request (a clock
        # conviction timed again, an evaluation run again alone) is not this one's.
        judge.send({"t": "trials", "ms": [], "from_start": True})
        # the candidate's CPU time over the timed trials, on the CPU (clock.hidden_cpu_check)
        self.cpu_snapshots: list[CpuSnapshot] = []
        with judge.lock.checking():
            first = self._round_set(0, checks.reference_mutates)
        leaf_bytes = [nbytes(t) for t in tensors(first.ref_out)]
        out_bytes = sum(leaf_bytes)
        # the leaves a sandbox maps afresh (checks.memory): what an honest forward faults in (clock.fresh_*_check)
        self.fresh_out_bytes = sum(b for b in leaf_bytes if b > FRESH_MAPPING_BYTES)
        # A reference that changes its inputs re-draws each set before it is staged (_staged): one at a time.
        self.per_run = 1 if checks.reference_mutates else \
            trials_per_run(input_bytes(first.values), out_bytes, trials)
        base_ms = self.baseline_channel.last_call_ms if self.baseline_channel is not None else 0.0
        runs: list[range | None | CheckedRun] = list(timed_stage_runs(warmup, trials, self.per_run))
        extra_runs = 1  # the run on garbage, as long as a timed run
        if not checks.reference_mutates:  # a mutating reference's sets are drawn again
            first_timed = len(runs_of(0, warmup, self.per_run))
            for kind in checks.run_sets:  # a run of each kind, each in a place drawn among the others
                runs.insert(first_timed + checked_place(len(runs) - first_timed), CheckedRun(kind))
                extra_runs += 1
        calls = warmup + trials + self.per_run * extra_runs
        with self._stretch(calls, [self.channel.last_call_ms] + [base_ms] * len(models)):
            for run in runs:
                if run is None or isinstance(run, CheckedRun):
                    first = None  # with no warm-up run, round 0's set is drawn again after it: one run's sets at a time
                    if run is None:
                        self._garbage_run(checks, models, picked, samples)
                    else:
                        self._checked_run(checks, models, picked, samples, run.kind)
                    continue
                with judge.lock.checking():  # the judge's own device work: beside other judges' checks
                    sets = [first if i == 0 and first is not None else self._round_set(i, checks.reference_mutates)
                            for i in run]
                first = None
                self._time_run(checks, models, sets, picked, samples)
                if sets[0].timed:
                    progress.extend(samples["main"][-1].calls_ms)
                del sets  # before the next run's sets are drawn: a large set's run holds one set, not two
                if progress and time.monotonic() - last_sent > 0.25:
                    judge.send({"t": "trials", "ms": list(progress)})
                    progress.clear()
                    last_sent = time.monotonic()
        if progress:
            judge.send({"t": "trials", "ms": list(progress)})
        if self.channel.counts_threads:
            self.cpu_snapshots.append(self.channel.sandbox.cpu_snapshot())
        r.stages.time_s = time.perf_counter() - t0
        return samples, out_bytes

    def _stretch(self, calls: int, call_ms: list[float]) -> contextlib.AbstractContextManager[None]:
        """Around `calls` rounds in runs of per_run, one call of each model whose latest call took
        `call_ms`: the device alone throughout where stretch_s expects them short, else per run."""
        return self.judge.lock.runs_alone(stretch_s(calls, self.per_run, call_ms) <= STRETCH_ALONE_S)

    def _round_set(self, i: int, mutates: bool, label: str | None = None) -> RoundSet:
        """Round i's fresh set and the judge's reference output for it (label: another name than
        the timed rounds' own, for the baselines' rounds alone and the run on garbage)."""
        warmup = max(0, int(self.cfg.warmup))
        timed = i >= warmup or label is not None
        label = label or (f"timed trial {i - warmup + 1}" if timed else f"warm-up call {i + 1}")
        draw_seed, seed = fresh_seed(), fresh_seed()
        values = draw(self.loaded.main.get_inputs, draw_seed)
        # A reference that changes its inputs needs its yardstick first, so every round gets one.
        exact = self.reference.exact(values, seed) if mutates else None
        ref_out = self.reference.outputs(values, seed, label)
        return RoundSet(i, label, timed, draw_seed, seed, values, exact, ref_out)

    def _garbage_run(self, checks: CheckRun, models: list[str], picked: set[int], samples: Samples) -> None:
        """The work check's run with every custom kernel run on garbage, in a timed run's place: its
        sets drawn as a timed run's (no yardstick: no precision is asked of it), its calls made as a
        timed run's, the baselines' calls on the same sets after them, the candidate stopped and the
        device alone as for every timed run, so that from inside the sandbox it is one run among
        the timed ones. No sample: its outputs are judged by how much of them is still right
        (sequence.CheckRun.judge_garbage_run)."""
        labels = [kernels_off_label(GARBAGE, k, self.per_run) for k in range(self.per_run)]
        with self.judge.lock.checking():
            sets = [self._round_set(-1, False, label) for label in labels]
        self._time_run(checks, models, sets, picked, samples, GARBAGE)

    def _checked_run(self, checks: CheckRun, models: list[str], picked: set[int], samples: Samples,
                     kind: RunSet) -> None:
        """A run as long as a timed run, made as a timed run's (module docstring), with a checked set of
        `kind` at every call, so a candidate that tells a run's later calls apart meets it at every
        place; every output verified as the checked sets are (against its yardstick), no sample. A
        call whose set the reference does not stay finite on, or refuses, gets a plain fresh draw
        instead (the run is still made, and as long: the count and length of runs say nothing)."""
        sets: list[RoundSet] = []
        with self.judge.lock.checking():
            for k in range(self.per_run):
                label = f"{kind.label} (call {k + 1} of a run of timed calls)"
                draw_seed, seed = fresh_seed(), fresh_seed()
                remake = functools.partial(kind.make, draw_seed)
                try:
                    values = remake()
                    ref_out = self.reference.outputs(values, seed, label)
                    finite = not nonfinite(ref_out)
                except ReferenceFailed:
                    finite = False
                if not finite:
                    plain = self._round_set(-1, False, f"call {k + 1} of a run of checked sets (plain: the reference "
                                                       f"does not stay finite on this draw of {kind.label})")
                    plain.timed = False  # verified, no sample
                    sets.append(plain)
                    continue
                sets.append(RoundSet(-1, label, False, draw_seed, seed, values, None, ref_out, remake))
                del values, ref_out
        self._time_run(checks, models, sets, picked, samples)

    def _judge_garbage_run(self, checks: CheckRun, results: list[Any], sets: list[RoundSet]) -> None:
        """The run on garbage's outputs judged; Stop where that settled the verdict."""
        usable = checks.usable_outputs(results, [(rs.label, rs.values, rs.ref_out) for rs in sets], GARBAGE)
        for rs in sets:
            rs.values = None  # a run of one call draws another set for its reference: not beside this one
        if checks.judge_garbage_run(usable) or self.obs.rejected:
            raise Stop()  # the verdict is settled: no more trials to time

    def _time_run(self, checks: CheckRun, models: list[str], sets: list[RoundSet], picked: set[int],
                  samples: Samples, kernels: KernelMode = RUN) -> None:
        """One run: the candidate's calls back to back (its custom kernels in `kernels`), then each
        baseline's calls on the same sets with the candidate stopped, the device alone for all of
        them (lock.timed_run; a baseline's outputs are checked before the next baseline's calls,
        which write into the same buffers); then, the device shared again and the candidate still
        stopped, the candidate's outputs verified (and the precision of the picked ones), or for
        the run on garbage judged (_judge_garbage_run) and no sample taken."""
        assert self.channel is not None
        mutates = checks.reference_mutates
        channel, sandbox = self.channel, self.channel.sandbox
        if channel.counts_threads and sets[0].timed and not self.cpu_snapshots:
            self.cpu_snapshots.append(sandbox.cpu_snapshot())
        baseline_trials: dict[str, Trial | None] = {}
        wrong: tuple[RoundSet, str] | None = None  # a checked set's call whose values were wrong, and how
        # The candidate is stopped from the end of its run until its outputs are verified: nothing of
        # its can run beside its baselines, nor touch the outputs it handed back.
        with contextlib.ExitStack() as stopped:
            with self.judge.lock.timed_run():
                # The inputs as drawn (re-drawn where the reference changed them), written once the sandbox is armed.
                staged = [self._staged(channel, Staging.AFTER_WARM_UP, rs, mutates, k) for k, rs in enumerate(sets)]
                results = channel.call_run(staged, "main", [rs.ref_out for rs in sets], [rs.seed for rs in sets],
                                           Stage.TIME, kernels=kernels,
                                           garbage_above=checks.garbage_above if kernels is GARBAGE else 0)
                stopped.enter_context(self.reference_runs())
                # The baselines' inputs, staged now: a picked trial's yardstick is taken from them below.
                # The reference's own Model is trusted, so its warm-up may follow the staging.
                base = [self._staged(self.baseline_channel, Staging.NOW_WARM, rs, mutates, k)
                        for k, rs in enumerate(sets)] if models else None
                for j, model_id in enumerate(models):
                    inputs = base if j == 0 else [self._staged(self.baseline_channel, Staging.NOW_WARM, rs, mutates, k)
                                                  for k, rs in enumerate(sets)]
                    ran = self._baseline_calls(model_id, sets, inputs, Stage.TIME)
                    baseline_trials[model_id] = self._baseline_trial(model_id, sets, ran)
            with self.judge.lock.checking():
                if kernels is GARBAGE:
                    self._judge_garbage_run(checks, results, sets)
                    return
                for k, (res, rs) in enumerate(zip(results, sets)):
                    staged_base = base[k] if base is not None else None
                    checked: list[str] | None = None  # a checked set's call: how its values were wrong
                    if rs.remake is not None:  # a checked set's: compared against its yardstick, as check_set does
                        rs.exact, checked = self._yardstick(rs, staged_base), []
                    exact = rs.exact if checked is not None else None
                    out = self._verify_timed(checks, res, rs.values, rs.ref_out, rs.label, exact, checked)
                    if checked:
                        wrong = (rs, checked[0])
                        break  # settled by the same set alone, once the candidate runs again (below)
                    self._check_picked(rs, out, picked, staged_base, mutates)  # its precision, where it has a yardstick
                if sets[0].timed:
                    samples["main"].append(Trial.of(results))
                for model_id, trial in baseline_trials.items():
                    if sets[0].timed and trial is not None:
                        samples[model_id].append(trial)
        if wrong is not None:
            self._alone_again(checks, *wrong)

    def _baseline_calls(self, model_id: str, sets: list[RoundSet], staged: list[Any], stage: Stage) -> list[Any]:
        """One baseline's calls on a run's staged sets. Their outputs sit in the reference sandbox's
        output buffers, which the next baseline's calls write into: check them before those."""
        assert self.baseline_channel is not None
        try:
            return self.baseline_channel.call_run(staged, model_id, [rs.ref_out for rs in sets],
                                                  [rs.seed for rs in sets], stage)
        except SandboxError as e:
            self.judge.baseline = None
            raise HarnessFault(f"the reference sandbox failed while timing the baselines: {e}") from None

    def _baseline_trial(self, model_id: str, sets: list[RoundSet], ran: list[Any]) -> Trial | None:
        """A baseline run's sample when every output is the reference's (_baseline_right), else None."""
        right = [b.reply.ok and self._baseline_right(b, model_id, rs.values, rs.ref_out, rs.label)
                 for b, rs in zip(ran, sets)]
        return Trial.of(ran) if len(ran) == len(sets) and all(right) else None

    def _check_picked(self, rs: RoundSet, out: Any, picked: set[int], base: Any, mutates: bool) -> None:
        """A verified timed output against the float64 yardstick, for the picked trials (and every
        trial where the reference changes its inputs, whose yardstick came first), and where it is
        suspect against the reference run on rounded operands, as a checked set's (checks/rounded.py:
        a candidate may tell a timed call's buffers from a checked call's); the yardstick is freed
        before the next is computed."""
        if out is None or (rs.exact is None and rs.index not in picked):
            rs.exact = None
            return
        exact, rs.exact = rs.exact, None
        if exact is None:
            exact = self._yardstick(rs, base)
        measured = check_precision(out, rs.ref_out, exact, rs.label, self.obs)
        if not mutates and rs.values is not None:  # the rounded runs need the inputs as the reference got them
            check_rounded_operands(out, rs.ref_out, exact, measured, self.reference, rs.values, rs.seed, rs.label,
                                   self.obs)
        del exact
        if self.obs.has("lower_precision"):
            raise Stop()  # the verdict is settled: no more trials to time

    def _yardstick(self, rs: RoundSet, base: Any) -> Any:
        """The float64 yardstick of a run's set, taken after its calls: from the reference sandbox's
        staged copy where the set is large (stage_first), the judge's own draw freed meanwhile and
        drawn again after (beside both sandboxes' input buffers, the draw and the float64 copy made this
        the evaluation's peak: 5x the set; without the draw, 4x); else from the draw."""
        if base is not None and stage_first(rs.values, self.device) and \
                not aliased_outputs(rs.ref_out, tensor_leaves(rs.values)):
            rs.values = None
            exact = self.reference.exact(base.values(), rs.seed)
            rs.values = rs.remake() if rs.remake is not None else draw(self.loaded.main.get_inputs, rs.draw_seed)
            return exact
        return self.reference.exact(rs.values, rs.seed)

    @contextlib.contextmanager
    def reference_runs(self) -> Iterator[None]:
        """The candidate's whole tree stopped while the reference sandbox runs, and let go only once
        that sandbox waits again (it collects garbage after each reply): running beside it, a process
        of the candidate's could stop it mid-run and leave it stopped."""
        assert self.channel is not None
        with self.channel.sandbox.paused():
            try:
                yield
            finally:
                if self.judge.baseline is not None:
                    self.judge.baseline.sandbox.wait_idle(REFERENCE_IDLE_S)

    def _staged(self, channel: Channel | None, staging: Staging, rs: RoundSet, mutates: bool, slot: int) -> Any:
        """Round set `rs` placed in call `slot` of a channel's run, or the same draw again where the
        reference changes its inputs (the re-drawn copy lives only until it is written)."""
        assert channel is not None
        return channel.stage_inputs(draw(self.loaded.main.get_inputs, rs.draw_seed) if mutates else rs.values,
                                    staging, slot=slot)

    def _baseline_right(self, res: Any, model_id: str, values: list[Any], ref_out: Any, label: str) -> bool:
        """A baseline trial counts only if its output is the reference's: a baseline whose compiled
        code was swapped for something faster and wrong (a poisoned cache) times nothing. Within
        BASELINE_TOLERANCE: torch.compile's own arithmetic (another variance formula for a batch
        norm in training mode) is PyTorch's, not a candidate's, and KernelBench times it as it is."""
        scratch = Observations()
        out = candidate_output(res, ref_out, tensor_leaves(values), label, scratch)
        noise = self._checks.timing_noise if self._checks is not None else {}
        m = None if out is None else compare_outputs(out, ref_out, baseline_tolerances(self.cfg.tolerances), label,
                                                     noise.get)
        if out is not None and m is None:
            return True
        name = "torch.compile" if model_id == "compiled" else "eager"
        why = m.note if m is not None else (scratch.mismatch.note if scratch.mismatch else "no output")
        self.obs.find("baseline_wrong", f"the {name} baseline's output on {label} is not the reference's ({why}): "
                                        "that trial is not counted", "warn")
        return False

    def _time_baselines_alone(self, bs: BaselineSandbox) -> Samples:
        """A few more baseline runs once the candidate's sandbox is gone: what the baselines cost
        when nothing of the candidate's (a process, queued device work) can run beside them."""
        assert self.baseline_channel is not None
        self.judge.stage(Stage.BASELINE)
        samples: Samples = {m: [] for m in self._baseline_models(bs)}
        mutates = self._checks is not None and self._checks.reference_mutates
        lock = self.judge.lock
        rounds = max(ALONE_MIN_ROUNDS, int(self.cfg.trials) // 4)
        with self._stretch(rounds, [self.baseline_channel.last_call_ms] * len(samples)):
            for run in runs_of(0, rounds, self.per_run):
                with lock.checking():
                    sets = [self._round_set(i, False, f"baseline round {i + 1} alone") for i in run]
                for model_id in samples:
                    with lock.timed_run():
                        staged = [self._staged(self.baseline_channel, Staging.AFTER_WARM_UP, rs, mutates, k)
                                  for k, rs in enumerate(sets)]
                        ran = self._baseline_calls(model_id, sets, staged, Stage.BASELINE)
                    with lock.checking():
                        trial = self._baseline_trial(model_id, sets, ran)
                    if trial is not None:
                        samples[model_id].append(trial)
        return samples

    def _alone_again(self, checks: CheckRun, rs: RoundSet, note: str) -> None:
        """A checked set the candidate got wrong within a run, given to it again as a call of its own
        (check_set, the candidate running): wrong there too, it is wrong on that set (the mismatch,
        INCORRECT); right there, it behaved differently within the run (changed_during_timing). A
        candidate wrong in general is then not convicted of telling runs apart, nor one that tells
        them apart let off."""
        assert rs.remake is not None
        with self.judge.lock.checking():
            checks.check_set(f"{rs.label}, the same set again as a call of its own", rs.remake, self.reference)
        if self.obs.mismatch is None:
            self.obs.find("changed_during_timing", f"on {rs.label} the output does not match the reference for "
                                                   f"its inputs ({note}), and on the same set as a call of its own it "
                                                   "does: it behaved differently once timed")
        raise Stop()  # the verdict is settled: no more trials to time

    def _verify_timed(self, checks: CheckRun, res: Any, values: list[Any], ref_out: Any, label: str,
                      exact: Any = None, wrong: list[str] | None = None) -> Any:
        """A timed call's reply, output and values checked (precision is the caller's, for the
        trials it picked): its output when that matched the reference, else None. exact: a
        checked set's yardstick, compared against as the checked sets are (check_set). wrong: for
        a checked set's call, where wrong values (in the reference's form) are told, nothing found
        yet: the same set alone settles what they mean (_alone_again)."""
        reply = res.reply
        if not reply.ok:
            raise CandidateFailed(f"ModelNew.forward raised on {label}: {reply.message}", reply.kind)
        record_notes(res, label, self.obs)
        checks.note_launches(reply.launches, label)
        if not checks.reference_mutates:  # then `values` is what was staged: the buffers must still hold it
            check_mutation(res, values, set(), label, self.obs)
        out = candidate_output(res, ref_out, tensor_leaves(values), label, self.obs)
        if out is None:
            self.obs.find("changed_during_timing", f"on {label} the output no longer had the reference's form "
                                                   f"({self.obs.mismatch.note if self.obs.mismatch else 'see findings'})")
        else:
            noise = noise_of(ref_out, exact) if exact is not None else \
                (lambda path: checks.timing_noise.get(path))  # noqa: E731
            m = compare_outputs(out, ref_out, self.cfg.tolerances, label, noise, exact)
            checks.note_stale(out, m, label)
            if m is not None and not self.obs.has("caching"):
                if wrong is not None:
                    wrong.append(m.note)
                else:
                    self.obs.find("changed_during_timing", f"on {label} the output does not match the reference "
                                                           f"for its inputs ({m.note}): it behaved differently once timed")
            if m is not None:
                out = None
        if self.obs.rejected:
            raise Stop()  # the verdict is settled: no more trials to time
        return out

    def _check_clocks(self, samples: Samples, out_bytes: int) -> None:
        """The rules on the timed rounds' clocks (clock.py), right after the rounds: the judge's wall
        clock against the reported times and the device's copy bandwidth, the tails past the end
        events, the L2 flushes, the CPU threads; before the work check, so a forged time is named
        first, whatever the work check's calls say next."""
        r = self.result
        cand = samples["main"]
        baselines = samples.get("eager", []) + samples.get("compiled", [])
        floor_ms = out_bytes / self.judge.bandwidth * 1e3
        figures, message = clock_check(self.device, clocked(cand), clocked(baselines), floor_ms)
        r.clock = figures
        if message:
            self.obs.find("clock", message)
        reported = spread([t.ms for t in cand])
        unjoined = tail_check([t.tail_ms for t in cand], [t.tail_ms for t in baselines],
                              reported.median_ms if reported else 0.0)
        if unjoined:
            self.obs.find("side_stream", unjoined)
        early = flush_check([t.flush_ms for t in cand], [t.flush_ms for t in baselines])
        if early:
            self.obs.find("flush_overlap", early)
        cut = short_flush_check([t.flush_ms for t in cand], [t.flush_ms for t in baselines])
        if cut:
            self.obs.find("harness_tamper", cut)
        if not self.device.startswith("cuda") and self.cfg.cpu_threads:  # a thread limit to hold it to
            threads = thread_check([t.busy_threads for t in cand], [t.busy_threads for t in baselines],
                                   self.cfg.cpu_threads)
            if threads:
                self.obs.find("global_setting", threads)
            snaps = self.cpu_snapshots
            hidden = hidden_cpu_check(snaps[0], snaps[-1]) if len(snaps) == 2 and cand else None
            if hidden:
                self.obs.find("background_thread", hidden)
        # the faults are counted on the CPU only (channel.call_run): each a GPU's caching allocator would spare
        eager = samples.get("eager", [])
        prefaulted = fresh_pages_check([t.faults for t in cand], [t.faults for t in eager], self.fresh_out_bytes) or \
            fresh_memory_check([t.anon_growth for t in cand], [t.anon_growth for t in eager], self.fresh_out_bytes,
                               rss_slack_bytes())
        if prefaulted:
            self.obs.find("prefaulted_output", prefaulted)
        if any(t.huge_pages for t in cand):  # the sandbox turned them off before any candidate code (memory.py)
            self.obs.find("prefaulted_output", "the sandbox turned transparent huge pages back on (prctl "
                                               "PR_SET_THP_DISABLE undone), where one fault maps and zeroes 2 MiB: "
                                               "the judge's figures of a fresh output's cost no longer hold")

    def _record_times(self, samples: Samples, alone: Samples) -> None:
        r, bs = self.result, self.judge.baseline
        cand = samples["main"]
        baselines = samples.get("eager", []) + samples.get("compiled", [])
        r.timings = [round(ms, 6) for t in cand for ms in t.calls_ms]
        r.runtime_spread = spread([t.ms for t in cand])
        r.runtime_ms = r.runtime_spread.median_ms if r.runtime_spread else None
        # The speedup is the judge's: a reported time below what its own clock saw (less the
        # reference's overhead) is replaced by the clock's figure (clock.py, judged_runtime).
        judged = judged_runtime(clocked(cand), clocked(baselines))
        if r.runtime_ms is not None and judged is not None and judged > r.runtime_ms:
            if judged > 1.05 * r.runtime_ms:  # named where it moves the figure, not for its noise
                self.obs.find("judge_clock", f"the judge's clock puts the median trial at {judged:.4g} ms beyond "
                                             f"the reference's overhead, the sandbox reported {r.runtime_ms:.4g} "
                                             "ms: the judge's figure is used", "warn")
            r.runtime_ms = judged
        r.ref_spread = self._undisturbed("eager", samples.get("eager", []), alone.get("eager", []))
        r.compile_ref_spread = self._undisturbed("torch.compile", samples.get("compiled", []), alone.get("compiled", []))
        r.ref_runtime_ms = r.ref_spread.median_ms if r.ref_spread else None
        r.compile_ref_runtime_ms = r.compile_ref_spread.median_ms if r.compile_ref_spread else None
        if r.runtime_ms and r.runtime_ms > 0:
            if r.ref_runtime_ms:
                r.speedup_eager = r.ref_runtime_ms / r.runtime_ms
            if r.compile_ref_runtime_ms:
                r.speedup_compile = r.compile_ref_runtime_ms / r.runtime_ms
        if bs is not None and bs.compile_note and self.cfg.time_compile_baseline:
            self.obs.find("compile_baseline", f"no torch.compile baseline: {bs.compile_note}", "warn")

    def _undisturbed(self, name: str, beside: list[Trial], alone: list[Trial]) -> Any:
        """The spread of a baseline as timed beside the candidate, unless its rounds timed alone
        afterwards show it was disturbed there: then the alone figures (and a finding naming both)."""
        interleaved, clean = spread([t.ms for t in beside]), spread([t.ms for t in alone])
        if interleaved is None or clean is None:
            return interleaved or clean
        noise = (clean.q3_ms - clean.q1_ms) / clean.median_ms if clean.median_ms > 0 else 0.0
        if interleaved.median_ms <= clean.median_ms * (1 + DISTURBED_FRACTION + 3 * noise):
            return interleaved
        self.obs.find("baseline_disturbed", f"the {name} baseline took {interleaved.median_ms:.4g} ms per trial "
                                            f"timed beside the candidate and {clean.median_ms:.4g} ms timed alone "
                                            "after it: something of the candidate's ran beside it; the figure "
                                            "timed alone is used", "warn")
        return clean


