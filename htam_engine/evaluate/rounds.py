"""The timed part of an evaluation: the baselines prepared, rounds of candidate, eager and
torch.compile calls, the baselines timed alone afterwards, and the figures.

Each round draws fresh inputs (a secret seed), computes the judge's reference output for them,
writes them into the candidate's shared input buffers right before it sends the call (the
baselines' only after the candidate's call was verified and its float64 yardstick freed),
and sends the same call to the candidate (its output verified against that reference) and then,
with the candidate's whole process tree stopped, to the reference sandbox's eager and compiled
models (their outputs verified as well). Once the candidate's sandbox is gone the baselines are
timed alone for a few more rounds; a baseline that was slower beside the candidate is replaced
by its figure alone. The clock rule (clock.py) compares the candidate's overhead with the
reference sandbox's.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any, Iterator, NamedTuple

from htam_engine.evaluate import wire
from htam_engine.evaluate.channel import Channel, fresh_seed
from htam_engine.evaluate.checks.compare import compare_outputs, tensors
from htam_engine.evaluate.checks.inputs import draw
from htam_engine.evaluate.checks.memory import aliased_outputs, tensor_leaves
from htam_engine.evaluate.checks.observe import (Observations, candidate_output, check_mutation, check_precision,
                                                 record_notes)
from htam_engine.evaluate.checks.sequence import CandidateFailed, CheckRun, Stop, stage_first
from htam_engine.evaluate.clock import (clock_check, ended_threads_check, flush_check, judged_runtime, spread,
                                        tail_check, thread_check)
from htam_engine.evaluate.reference import BaselineSandbox
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

class Trial(NamedTuple):
    """One timed call as the judge keeps it."""

    wall_ms: float  # the judge's clock, send to reply
    ms: float  # the sandbox's report
    tail_ms: float  # device work after the end event (timing.run_trial; 0 on the CPU)
    flush_ms: float  # the L2 flush before the start event (timing.run_trial; 0 on the CPU)
    busy_threads: int | None  # the sandbox's threads that ran a share of it (channel.py; CPU only)

    @classmethod
    def of(cls, res: Any) -> "Trial":
        return cls(res.wall_ms, res.reply.ms, res.reply.tail_ms, res.reply.flush_ms, res.busy_threads)


Samples = dict[str, list[Trial]]  # model -> its timed trials


def clocked(trials: list[Trial]) -> list[tuple[float, float]]:
    """(judge wall ms, reported ms) per trial, as clock.py's rules take them."""
    return [(t.wall_ms, t.ms) for t in trials]


class HarnessFault(Exception):
    """The harness could not evaluate: says nothing about the candidate."""


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
        staged = self.baseline_channel.stage_inputs(values, model_id)
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
        judge, cfg, r, loaded = self.judge, self.cfg, self.result, self.loaded
        judge.stage(Stage.TIME)
        t0 = time.perf_counter()
        models = self._baseline_models(bs) if bs is not None else []
        samples: Samples = {"main": [], **{m: [] for m in models}}
        batch: list[float] = []
        last_sent = time.monotonic()
        rounds = max(0, int(cfg.warmup)) + max(1, int(cfg.trials))
        timed_rounds = range(max(0, int(cfg.warmup)), rounds)
        picked = set(secrets.SystemRandom().sample(timed_rounds, min(PRECISION_TRIALS, len(timed_rounds))))
        out_bytes = 0
        # the candidate's CPU time over the timed trials, on the CPU (clock.ended_threads_check)
        self.cpu_snapshots: list[tuple[float | None, dict[str, int] | None]] = []
        sandbox, watch = self.channel.sandbox, self.channel.counts_threads
        for i in range(rounds):
            timed = i >= cfg.warmup
            if watch and i == cfg.warmup:
                self.cpu_snapshots.append((sandbox.process_cpu_ms(), sandbox.thread_cpu_ns()))
            label = f"timed trial {i - cfg.warmup + 1}" if timed else f"warm-up call {i + 1}"
            draw_seed, seed = fresh_seed(), fresh_seed()
            values = draw(loaded.main.get_inputs, draw_seed)
            mutates = checks.reference_mutates
            # A reference that changes its inputs needs its yardstick first, so every round gets one.
            exact = self.reference.exact(values, seed) if mutates else None
            ref_out = self.reference.outputs(values, seed, label)
            out_bytes = sum(t.numel() * t.element_size() for t in tensors(ref_out))
            # The inputs as drawn (re-drawn where the reference changed them), staged right before the send.
            res = self.channel.call(self._staged(self.channel, "main", values, draw_seed, mutates), "main", ref_out, seed,
                                    Stage.TIME)
            out = self._verify_timed(checks, res, values, ref_out, label)
            # The first baseline's inputs, staged now: a picked trial's yardstick is taken from them below.
            # No warm-up call yet: the reference sandbox runs only while the candidate's tree is stopped
            # (running beside it, a process of the candidate's could stop it for good, or slow it).
            staged = self._staged(self.baseline_channel, None, values, draw_seed, mutates) if models else None
            if out is not None and (exact is not None or i in picked):
                if exact is None and staged is not None and stage_first(values, self.device) and \
                        not aliased_outputs(ref_out, tensor_leaves(values)):
                    # Beside both sandboxes' input buffers, the judge's own draw and the float64 copy
                    # made this the evaluation's peak (5x the set); without the draw, 4x.
                    del values
                    exact = self.reference.exact(staged.values(), seed)
                    values = draw(loaded.main.get_inputs, draw_seed)
                elif exact is None:
                    exact = self.reference.exact(values, seed)
                check_precision(out, ref_out, exact, label, self.obs)
                if any(f.rule == "lower_precision" for f in self.obs.findings):
                    raise Stop()  # the verdict is settled: no more trials to time
            del exact  # before the next round's yardstick is computed
            if timed:
                samples["main"].append(Trial.of(res))
                batch.append(res.reply.ms)
            with self.reference_runs():  # the candidate cannot run beside its baselines
                for k, model_id in enumerate(models):
                    assert self.baseline_channel is not None
                    # the first baseline's inputs were staged above; the next gets the same values again.
                    # The reference's own Model is trusted, so its warm-up may follow the staging.
                    self.baseline_channel.warm(model_id)
                    inputs = staged if k == 0 else self._staged(self.baseline_channel, None, values, draw_seed, mutates)
                    try:
                        b = self.baseline_channel.call(inputs, model_id, ref_out, seed, Stage.TIME)
                    except SandboxError as e:
                        judge.baseline = None
                        raise HarnessFault(f"the reference sandbox failed while timing the baselines: {e}") from None
                    if b.reply.ok and timed and self._baseline_right(b, model_id, values, ref_out, label):
                        samples[model_id].append(Trial.of(b))
            if batch and time.monotonic() - last_sent > 0.25:
                judge.send({"t": "trials", "ms": list(batch)})
                batch.clear()
                last_sent = time.monotonic()
        if batch:
            judge.send({"t": "trials", "ms": list(batch)})
        if watch:
            self.cpu_snapshots.append((sandbox.process_cpu_ms(), sandbox.thread_cpu_ns()))
        r.stages.time_s = time.perf_counter() - t0
        return samples, out_bytes

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

    def _staged(self, channel: Channel, warm: str | None, values: list[Any], draw_seed: int, mutates: bool) -> Any:
        """`values` written into a channel's shared input buffers (after a warm-up call of model `warm`,
        if named), or the same draw again where the reference changes its inputs (the re-drawn copy
        lives only while it is copied)."""
        return channel.stage_inputs(draw(self.loaded.main.get_inputs, draw_seed) if mutates else values, warm)

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
        """A few more baseline rounds once the candidate's sandbox is gone: what the baselines cost
        when nothing of the candidate's (a process, queued device work) can run beside them."""
        assert self.baseline_channel is not None
        self.judge.stage(Stage.BASELINE)
        samples: Samples = {m: [] for m in self._baseline_models(bs)}
        mutates = self._checks is not None and self._checks.reference_mutates
        for i in range(max(ALONE_MIN_ROUNDS, int(self.cfg.trials) // 4)):
            label = f"baseline round {i + 1} alone"
            draw_seed, seed = fresh_seed(), fresh_seed()
            values = draw(self.loaded.main.get_inputs, draw_seed)
            staged = {m: self.baseline_channel.stage_inputs(values, m) for m in list(samples)[:1]}
            ref_out = self.reference.outputs(values, seed, label)
            for model_id in samples:
                again = staged.pop(model_id, None) or self._staged(self.baseline_channel, model_id, values, draw_seed, mutates)
                try:
                    b = self.baseline_channel.call(again, model_id, ref_out, seed, Stage.BASELINE)
                except SandboxError as e:
                    self.judge.baseline = None
                    raise HarnessFault(f"the reference sandbox failed while timing the baselines: {e}") from None
                if b.reply.ok and self._baseline_right(b, model_id, values, ref_out, label):
                    samples[model_id].append(Trial.of(b))
        return samples

    def _verify_timed(self, checks: CheckRun, res: Any, values: list[Any], ref_out: Any, label: str) -> Any:
        """A timed call's reply, output and values checked (precision is the caller's, for the
        trials it picked): its output when that matched the reference, else None."""
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
            noise = lambda path: checks.timing_noise.get(path)  # noqa: E731
            m = compare_outputs(out, ref_out, self.cfg.tolerances, label, noise)
            checks.note_stale(out, m, label)
            if m is not None and not any(f.rule == "caching" for f in self.obs.findings):
                self.obs.find("changed_during_timing", f"on {label} the output does not match the reference for "
                                                       f"its inputs ({m.note}): it behaved differently once timed")
            if m is not None:
                out = None
        if self.obs.rejected:
            raise Stop()  # the verdict is settled: no more trials to time
        return out

    def _record_times(self, samples: Samples, alone: Samples, out_bytes: int) -> None:
        r, bs = self.result, self.judge.baseline
        cand = samples["main"]
        baselines = samples.get("eager", []) + samples.get("compiled", [])
        r.timings = [round(t.ms, 6) for t in cand]
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
        floor_ms = out_bytes / self.judge.bandwidth() * 1e3
        figures, message = clock_check(self.device, clocked(cand), clocked(baselines), floor_ms)
        r.clock = figures
        if message:
            self.obs.find("clock", message)
        unjoined = tail_check([t.tail_ms for t in cand], [t.tail_ms for t in baselines],
                              r.runtime_spread.median_ms if r.runtime_spread else 0.0)
        if unjoined:
            self.obs.find("side_stream", unjoined)
        early = flush_check([t.flush_ms for t in cand], [t.flush_ms for t in baselines])
        if early:
            self.obs.find("flush_overlap", early)
        if not self.device.startswith("cuda") and self.cfg.cpu_threads:  # a thread limit to hold it to
            threads = thread_check([t.busy_threads for t in cand], [t.busy_threads for t in baselines],
                                   self.cfg.cpu_threads)
            if threads:
                self.obs.find("global_setting", threads)
            snaps = self.cpu_snapshots
            ended = ended_threads_check(snaps[0], snaps[-1]) if len(snaps) == 2 and cand else None
            if ended:
                self.obs.find("background_thread", ended)
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


