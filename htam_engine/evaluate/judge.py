"""The judge: one evaluation request from start to verdict, in a process that never imports or
runs candidate code.

It owns the loaded problem, the reference model (built under the construction seed as
KernelBench builds it) and its float64 copy, every input set (from seeds drawn with `secrets`
per evaluation, never sent anywhere), the reference outputs, every comparison, the clock, the
baselines, the verdict and the EvalResult. The candidate runs in a fresh sandbox forked from the
zygote (never reused for another candidate); the baselines run in a reference sandbox that
never ran candidate code, kept per loaded problem.

Order: build (sandbox) -> construct and check (a check slot, the device lock shared) ->
prepare the baselines (build, torch.compile, warm-up; shared) -> timed rounds, each candidate,
eager, compiled on fresh inputs, every candidate trial verified (the device alone) -> the
work check, with custom kernels switched off (shared) -> verdict. Any reject-level finding
changes the verdict.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import time
import traceback
from typing import Any, Callable

import torch

from htam_engine.evaluate import wire
from htam_engine.evaluate.cache import atomic_write_text, build_dir
from htam_engine.evaluate.channel import Channel, fresh_seed
from htam_engine.evaluate.checks.compare import compare_outputs, tensors
from htam_engine.evaluate.checks.inputs import draw
from htam_engine.evaluate.checks.memory import tensor_leaves
from htam_engine.evaluate.checks.observe import Observations, candidate_output, record_notes
from htam_engine.evaluate.checks.sequence import CandidateFailed, CheckRun, Stop
from htam_engine.evaluate.clock import clock_check, copy_bandwidth, spread
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.devicelock import DeviceLock
from htam_engine.evaluate.diagnostics import one_line, parse_compiler_output, trim_log
from htam_engine.evaluate.reference import BaselineSandbox, ReferenceFailed, ReferenceModel
from htam_engine.evaluate.result import EvalResult, Finding, Mismatch, Status
from htam_engine.evaluate.sandbox_client import (Budget, HarnessStartError, SandboxDied, SandboxError, SandboxMemory,
                                                 SandboxLimits, SandboxProcess, SandboxProtocol, SandboxTimeout,
                                                 ZygoteProcess, fork_sandbox)
from htam_engine.evaluate.shared import NoPrivatePool
from htam_engine.evaluate.stages import Stage
from htam_engine.problems.loader import LoadedProblem, load_for_judge
from htam_engine.problems.model import ProblemError

Send = Callable[[dict[str, Any]], None]
_FAILED = ".htam-build-failed.json"
# torch's message when ninja/the compiler failed (as opposed to a Python error at import).
_BUILD_FAILED = "Error building extension"
# Build failures that are the machine's, not the candidate's.
_ENVIRONMENT = re.compile(r"nvcc: not found|No such file or directory: '?(nvcc|c\+\+|g\+\+|ninja)|CUDA_HOME environment"
                          r"|Ninja is required|command not found: (nvcc|c\+\+)|cannot find -lcudart", re.I)
_SANDBOX_START_S = 300.0
# Baseline rounds timed alone after the candidate's sandbox is gone (at least; trials / 4 if more).
ALONE_MIN_ROUNDS = 3
# A baseline beside the candidate slower than alone by more than this (plus 3x its own relative
# spread) was disturbed.
DISTURBED_FRACTION = 0.15
_BASELINE_PREP_S = 1800.0
_KEPT_PROBLEMS = 2


class HarnessFault(Exception):
    """The harness could not evaluate: says nothing about the candidate."""


def _oom(exc: BaseException) -> bool:
    return isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)) or "out of memory" in str(exc).lower()


def capacity_message(exc: BaseException, device: str) -> str:
    """'the judge needs N GiB on DEVICE, the device has M GiB' from an out-of-memory in the judge."""
    gib = 1 << 30
    if device.startswith("cuda"):
        wanted = 0.0
        m = re.search(r"Tried to allocate ([\d.]+) ([KMGT]i?B)", str(exc))
        if m:
            wanted = float(m.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": gib, "T": 1 << 40}[m.group(2)[0]]
        held = float(torch.cuda.max_memory_allocated())
        total = float(torch.cuda.get_device_properties(torch.device(device)).total_memory)
        return (f"the judge ran out of GPU memory: it needs {(held + wanted) / gib:.1f} GiB on {device}, the device "
                f"has {total / gib:.1f} GiB (a harness capacity limit, not the candidate's fault)")
    import psutil

    return (f"the judge ran out of host memory: the machine has {psutil.virtual_memory().total / gib:.1f} GiB "
            "(a harness capacity limit, not the candidate's fault)")


def warm_meta_ops() -> None:
    """Take the imports of torch's first meta-device operations now (sympy, torch._dynamo: 2-3 s
    of a fresh judge's first load of a problem on the H200 box otherwise)."""
    with contextlib.suppress(Exception), torch.device("meta"):
        (torch.randn(2, 2) * 2.0 + 1.0).relu()


def warm_device(device: str) -> None:
    """The CUDA context and the kernels every check uses, at judge start, not under a check slot."""
    if device.startswith("cuda"):
        with contextlib.suppress(Exception):
            x = torch.randn(64, 64, device=device)
            y = torch.where(torch.isfinite(x), (x * 2 + 1).relu(), x).abs().amax()
            (torch.mm(x, x).sum() + y).item()
    warm_meta_ops()


def release_memory(device: str) -> None:
    """On CUDA: what an evaluation left behind (cyclic garbage, the allocator's free blocks) goes
    back to the device for the next judge. (On the CPU reference counting has freed it already.)"""
    if device.startswith("cuda"):
        import gc

        gc.collect()
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()


class Judge:
    """One per judge process: the zygote, a spare sandbox, the loaded problems and baselines."""

    def __init__(self, device: str, send: Send, env: dict[str, str] | None = None,
                 zygote: ZygoteProcess | None = None):
        """env: the sandboxes' environment (default: this process's, which the engine scrubbed).
        zygote: one already launched (the judge's process starts it before importing torch)."""
        self.device = device
        self.send = send
        self.zygote = zygote or ZygoteProcess(dict(os.environ if env is None else env))
        self.zygote_error = ""
        try:
            if self.zygote.proc is None:
                self.zygote.launch()
        except HarnessStartError as exc:
            self.zygote_error = str(exc)
        warm_device(device)  # while the zygote imports
        self.lock = DeviceLock(device, os.environ.get("HTAM_WORKER_LOCK") or f"time-{device.replace(':', '')}",
                               lambda stage: self.stage(Stage(stage)))
        if not self.zygote_error:
            try:
                self.zygote.wait_ready()
            except HarnessStartError as exc:
                self.zygote_error = str(exc)
        self._spare: SandboxProcess | None = None
        self.problems: collections.OrderedDict[str, tuple[LoadedProblem, ReferenceModel | None]] = \
            collections.OrderedDict()
        self.baseline: BaselineSandbox | None = None
        self._bandwidth: float | None = None
        self._fork_spare(SandboxLimits.of(EvalConfig(), device))  # the usual limits, until a request says

    # ------------------------------------------------------------------ helpers
    def stage(self, stage: Stage) -> None:
        self.send({"t": "stage", "stage": stage.value})

    def bandwidth(self) -> float:
        if self._bandwidth is None:
            self._bandwidth = copy_bandwidth(self.device)
        return self._bandwidth

    def _fork_spare(self, limits: SandboxLimits) -> None:
        if self.zygote_error:
            return
        try:
            self._spare = fork_sandbox(self.zygote, "candidate", self.device, limits)
        except HarnessStartError as exc:
            self._spare, self.zygote_error = None, str(exc)

    def candidate_sandbox(self, limits: SandboxLimits) -> SandboxProcess:
        """A fresh sandbox (the spare started ahead, when its limits are these), and the next
        spare behind it."""
        if self.zygote_error and not self.zygote.alive():
            self.zygote_error = ""
            try:
                self.zygote.start()
            except HarnessStartError as exc:
                self.zygote_error = str(exc)
                raise HarnessFault(self.zygote_error) from None
        sandbox, self._spare = self._spare, None
        if sandbox is None or not sandbox.alive() or sandbox.limits != limits:
            if sandbox is not None:
                sandbox.kill()
            try:
                sandbox = fork_sandbox(self.zygote, "candidate", self.device, limits)
            except HarnessStartError as exc:
                raise HarnessFault(str(exc)) from None
        self._fork_spare(limits)
        return sandbox

    def loaded(self, problem: Any, config: EvalConfig) -> tuple[LoadedProblem, ReferenceModel | None]:
        """The loaded problem (and its reference model, once built), kept for the next request."""
        from htam_engine.problems.loader import problem_key

        unseen = dict(config.unseen_shape) if config.unseen_shape is not None else None
        key = problem_key(problem, self.device, unseen)
        if key in self.problems:
            self.problems.move_to_end(key)
            return self.problems[key]
        loaded = load_for_judge(problem, self.device, unseen, check_unseen=config.check_unseen_shape)
        self.problems[key] = (loaded, None)
        while len(self.problems) > _KEPT_PROBLEMS:
            self.problems.popitem(last=False)
        return self.problems[key]

    def keep_reference(self, loaded: LoadedProblem, reference: ReferenceModel) -> None:
        if loaded.key in self.problems:
            self.problems[loaded.key] = (loaded, reference)

    def baseline_for(self, loaded: LoadedProblem, config: EvalConfig, init: list[Any]) -> BaselineSandbox:
        """The reference sandbox of this problem (a new one when the problem changed or it died)."""
        bs = self.baseline
        limits = SandboxLimits.of(config, self.device, "reference")
        if bs is not None and (bs.problem_key != loaded.key or not bs.alive() or bs.sandbox.limits != limits):
            bs.close()
            bs = self.baseline = None
        if bs is not None:
            return bs
        try:
            sandbox = fork_sandbox(self.zygote, "reference", self.device, limits)
        except HarnessStartError as exc:
            raise HarnessFault(str(exc)) from None
        bs = BaselineSandbox(sandbox, loaded.key)
        channel = Channel(sandbox, self.device, 0.0, None)
        reply = channel.request(wire.LoadReference(channel.next_seq(), loaded.source, loaded.label,
                                                   dict(loaded.overrides)), Stage.BASELINE, _SANDBOX_START_S)
        if not reply.ok:
            sandbox.kill()
            raise HarnessFault(reply.message)
        reply = channel.request(wire.Construct(channel.next_seq(), "eager", init, config.seed), Stage.BASELINE,
                                _BASELINE_PREP_S)
        if not reply.ok:
            sandbox.kill()
            raise HarnessFault(f"the reference sandbox could not build Model: {reply.message}")
        bs.models.add("eager")
        self.baseline = bs
        return bs

    def evaluate(self, problem: Any, code: str, config: EvalConfig, backend: str, key: str,
                 memory_mb: float) -> tuple[EvalResult, bool]:
        """One candidate, start to finish: (the result, whether this judge is fit for the next)."""
        ev = Evaluation(self, problem, code, config, backend, key, memory_mb)
        return ev.run()

    def close(self) -> None:
        if self._spare is not None:
            self._spare.kill()
        if self.baseline is not None:
            self.baseline.close()
        self.zygote.close()


class Evaluation:
    def __init__(self, judge: Judge, problem: Any, code: str, config: EvalConfig, backend: str, key: str,
                 memory_mb: float):
        self.judge = judge
        self.device = judge.device
        self.problem = problem
        self.code = code
        self.cfg = config
        self.backend = backend
        self.key = key
        self.memory_mb = memory_mb
        self.result = EvalResult(status=Status.OK, device=self.device, backend=backend)
        self.obs = Observations()
        self.budget = Budget(float(config.timeout_s))
        self.channel: Channel | None = None
        self.baseline_channel: Channel | None = None
        self.healthy = True
        self.extension_ops = False
        self._mutates = False  # the reference changes its inputs in place (so each call gets a fresh draw)
        self._checks: CheckRun | None = None

    # ------------------------------------------------------------------ the whole request
    def run(self) -> tuple[EvalResult, bool]:
        started = time.perf_counter()
        r = self.result
        try:
            self._run()
        except Stop:
            pass
        except CandidateFailed as e:
            self._fail(Status.COMPILE_ERROR if e.kind == "compile_error" else Status.RUNTIME_ERROR, str(e))
            if e.kind == "compile_error":
                r.diagnostics.compiler = parse_compiler_output(str(e))
        except SandboxTimeout as e:
            self._fail(Status.TIMEOUT, f"candidate {e}")
        except SandboxProtocol as e:
            self.obs.find("protocol", f"{e} (candidate code wrote into the sandbox's channel)")
        except (SandboxDied, SandboxMemory) as e:
            self._fail(Status.RUNTIME_ERROR, str(e))
        except ReferenceFailed as e:
            self._fail(Status.HARNESS_ERROR, str(e))
        except (HarnessFault, HarnessStartError, NoPrivatePool, ProblemError) as e:
            self._fail(Status.HARNESS_ERROR, str(e))
        except Exception as e:  # noqa: BLE001 - the judge's own fault: reported, and this judge retired
            if _oom(e):
                self._fail(Status.HARNESS_ERROR, capacity_message(e, self.device))
            else:
                self._fail(Status.HARNESS_ERROR, f"the judge failed: {one_line(e)}")
                r.diagnostics.log = trim_log(traceback.format_exc())
                self.healthy = False
        finally:
            self._close()
        self._conclude()
        r.stages.total_s = time.perf_counter() - started
        return r, self.healthy

    def _fail(self, status: Status, message: str) -> None:
        r = self.result
        if r.status is Status.OK:  # the first failure names the evaluation
            r.status, r.correct = status, False
            r.diagnostics.message = message

    def _conclude(self) -> None:
        """The verdict from everything recorded: reject findings win, then failures, mismatches."""
        r, obs = self.result, self.obs
        r.integrity = list(obs.findings)
        r.diagnostics.mismatch = obs.mismatch
        rejects = [f for f in obs.findings if f.severity == "reject"]
        if rejects and r.status in (Status.OK, Status.INCORRECT, Status.RUNTIME_ERROR, Status.COMPILE_ERROR):
            r.status, r.diagnostics.message = Status.REJECTED, rejects[0].message
        elif r.status is Status.OK:
            status, message = _verdict(obs.findings, obs.mismatch)
            r.status, r.diagnostics.message = status, message
        r.correct = r.status is Status.OK
        if not r.correct:
            r.runtime_ms = r.speedup_eager = r.speedup_compile = None
            r.ref_runtime_ms = r.compile_ref_runtime_ms = None

    def _close(self) -> None:
        if self.channel is not None:
            self.channel.sandbox.kill()
            self.channel.close_after_death()
        if self.baseline_channel is not None:
            with contextlib.suppress(SandboxError):
                self.baseline_channel.release_buffers()
        release_memory(self.device)

    # ------------------------------------------------------------------ stages
    def _run(self) -> None:
        judge, cfg, r = self.judge, self.cfg, self.result
        t0 = time.perf_counter()
        failed = build_dir(self.key) / _FAILED
        if failed.exists() and self._replay_failure(failed):
            judge.stage(Stage.COMPILE)
            r.stages.compile_s = time.perf_counter() - t0
            raise Stop()
        if judge.zygote_error and not judge.zygote.alive():
            raise HarnessFault(judge.zygote_error)
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise HarnessFault(f"no CUDA device is visible to the judge (device {self.device})")
        loaded, reference = judge.loaded(self.problem, cfg)
        self.loaded = loaded
        self.channel = Channel(judge.candidate_sandbox(SandboxLimits.of(cfg, self.device)), self.device,
                               self.memory_mb, self.budget, judge.stage)
        self._build(failed)
        r.stages.compile_s = time.perf_counter() - t0
        init = list(loaded.main.get_init_inputs())
        with judge.lock.holding_state():
            checks = self._checks = self._check(loaded, reference, init)
            if self.obs.rejected or _verdict(self.obs.findings, self.obs.mismatch)[0] is not Status.OK:
                return
            r.correct = True
            baseline = self._prepare_baselines(loaded, init)
            with judge.lock.timing():
                samples, out_bytes = self._time(checks, baseline)
            with judge.lock.checking():
                judge.stage(Stage.CHECK)
                checks.check_kernels_did_the_work()
            alone: dict[str, list[tuple[float, float]]] = {}
            if not self.obs.rejected and baseline is not None:
                self.channel.sandbox.kill()  # nothing of the candidate's is left to disturb them
                with judge.lock.timing():
                    alone = self._time_baselines_alone(baseline)
            self._record_times(samples, alone, out_bytes)

    def _build(self, failed: Any) -> None:
        assert self.channel is not None
        r = self.result
        self.judge.stage(Stage.COMPILE)
        reply = self.channel.request(wire.Build(self.channel.next_seq(), self.code, self.key, self.backend),
                                     Stage.COMPILE, deadline_s=None)
        if not isinstance(reply, wire.Outcome):
            raise SandboxProtocol(Stage.COMPILE, f"a {type(reply).__name__} in answer to a build")
        r.stages.compile_cached = reply.compile_cached
        self.extension_ops = reply.extension_ops
        if reply.ok:
            return
        r.diagnostics.compiler = list(reply.compiler)
        r.diagnostics.log = reply.log
        if _ENVIRONMENT.search(reply.log or reply.message):
            self._fail(Status.HARNESS_ERROR, f"the machine cannot build this candidate: {reply.message}")
            raise Stop()
        self._fail(Status.COMPILE_ERROR, reply.message)
        if _BUILD_FAILED in reply.log:
            # The same source would fail the same way: remember it, never rebuild it.
            atomic_write_text(failed, json.dumps(r.to_dict()))
        raise Stop()

    def _replay_failure(self, failed: Any) -> bool:
        """Fill the result from a cached build failure of this exact source; False if unreadable."""
        try:
            cached = EvalResult.from_dict(json.loads(open(failed).read()))
        except (OSError, ValueError, KeyError, TypeError):
            return False
        self._fail(Status.COMPILE_ERROR, cached.diagnostics.message)
        self.result.diagnostics.compiler = cached.diagnostics.compiler
        self.result.diagnostics.log = cached.diagnostics.log
        self.result.stages.compile_cached = True
        return True

    def _check(self, loaded: LoadedProblem, reference: ReferenceModel | None, init: list[Any]) -> CheckRun:
        """Construct both models, compare their parameters, run the checked calls (beside other
        checkers). A check that ran out of memory there is checked again with the device alone."""
        try:
            with self.judge.lock.checking():
                return self._check_once(loaded, reference, init)
        except CandidateFailed as e:
            if not (self.judge.lock.slots > 1 and "out of memory" in str(e).lower()):
                raise
        except Exception as e:  # noqa: BLE001 - the judge's own out-of-memory, beside other checkers
            if not (self.judge.lock.slots > 1 and _oom(e)):
                raise
        self.obs = Observations()
        assert self.channel is not None
        self.channel.sandbox.kill()
        self.channel.close_after_death()
        release_memory(self.device)
        self.channel = Channel(self.judge.candidate_sandbox(SandboxLimits.of(self.cfg, self.device)), self.device,
                               self.memory_mb, self.budget, self.judge.stage)
        self._build(build_dir(self.key) / _FAILED)
        with self.judge.lock.timing():
            return self._check_once(loaded, getattr(self, "reference", None), init)

    def _check_once(self, loaded: LoadedProblem, reference: ReferenceModel | None, init: list[Any]) -> CheckRun:
        assert self.channel is not None
        judge, r = self.judge, self.result
        judge.stage(Stage.CHECK)
        t0 = time.perf_counter()
        if reference is None:
            reference = ReferenceModel(loaded.main.Model, init, self.cfg.seed, self.device)
            judge.keep_reference(loaded, reference)
        self.reference = reference
        self.channel.reserve_inputs(loaded.input_layouts)
        self.channel.reserve_inputs(loaded.unseen_input_layouts)
        checks = CheckRun(self.channel, loaded, reference, self.cfg, self.obs, self.device)
        checks.extension_ops = self.extension_ops
        try:
            self._compare_parameters(checks.construct("main", init), reference.prints)
            checks.run(init)
        finally:
            reference.drop_exact()
            r.stages.check_s = time.perf_counter() - t0
        return checks

    def _compare_parameters(self, candidate: list[wire.ParamPrint], ref: list[wire.ParamPrint]) -> None:
        """Every parameter and buffer of ModelNew should equal one of Model's (layout aside)."""
        def close(a: float, b: float) -> bool:
            return abs(a - b) <= 1e-5 * max(abs(a), abs(b)) + 1e-6

        for p in candidate:
            if not any(q.numel == p.numel and close(q.total, p.total) and close(q.squares, p.squares) for q in ref):
                self.obs.find("parameters_differ", f"ModelNew's {p.name} ({p.numel} values) equals none of Model's "
                                                   "parameters or buffers: build layers in the same order under the "
                                                   "same seed, as Model does (KernelBench's rule)", "warn")
                return

    # ------------------------------------------------------------------ baselines and timing
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
        with judge.lock.checking():
            judge.stage(Stage.BASELINE)
            r.stages.reference_reused = judge.baseline is not None and judge.baseline.problem_key == loaded.key \
                and judge.baseline.alive()
            bs = judge.baseline_for(loaded, cfg, init)
            channel = self.baseline_channel = Channel(bs.sandbox, self.device, 0.0, None)
            channel.reserve_inputs(loaded.input_layouts)
            if cfg.time_compile_baseline and "compiled" not in bs.models and not bs.compile_note:
                reply = channel.request(wire.Construct(channel.next_seq(), "compiled", [], cfg.seed, compiled=True,
                                                       of="eager"), Stage.BASELINE, _BASELINE_PREP_S)
                if reply.ok:
                    bs.models.add("compiled")
                else:
                    bs.compile_note = reply.message
            for model_id in self._baseline_models(bs):
                values = draw(loaded.main.get_inputs, fresh_seed())
                seed = fresh_seed()
                staged = channel.stage_inputs(values)
                ref_out = self.reference.outputs(values, seed, "a baseline warm-up")
                res = channel.call(staged, model_id, ref_out, seed, Stage.BASELINE)
                if not res.reply.ok and model_id == "compiled":
                    bs.models.discard("compiled")
                    bs.compile_note = res.reply.message
                elif not res.reply.ok:
                    raise HarnessFault(f"the eager baseline failed: {res.reply.message}")
        bs.evaluations += 1
        r.stages.baseline_s = time.perf_counter() - t0
        return bs

    def _baseline_models(self, bs: BaselineSandbox) -> list[str]:
        wanted = ["eager"] + (["compiled"] if self.cfg.time_compile_baseline else [])
        return [m for m in wanted if m in bs.models]

    def _time(self, checks: CheckRun, bs: BaselineSandbox | None) -> tuple[dict[str, list[tuple[float, float]]], int]:
        """Rounds of candidate, eager and compiled calls on fresh inputs; every candidate trial's
        output verified against the judge's reference for that trial's inputs. Returns the
        (judge wall ms, reported ms) samples per model and the output's bytes."""
        assert self.channel is not None
        judge, cfg, r, loaded = self.judge, self.cfg, self.result, self.loaded
        judge.stage(Stage.TIME)
        t0 = time.perf_counter()
        self._mutates = checks.reference_mutates
        models = self._baseline_models(bs) if bs is not None else []
        samples: dict[str, list[tuple[float, float]]] = {"main": [], **{m: [] for m in models}}
        batch: list[float] = []
        last_sent = time.monotonic()
        rounds = max(0, int(cfg.warmup)) + max(1, int(cfg.trials))
        out_bytes = 0
        for i in range(rounds):
            timed = i >= cfg.warmup
            label = f"timed trial {i - cfg.warmup + 1}" if timed else f"warm-up call {i + 1}"
            draw_seed, seed = fresh_seed(), fresh_seed()
            values = draw(loaded.main.get_inputs, draw_seed)
            staged = self.channel.stage_inputs(values)
            staged_b = self.baseline_channel.stage_inputs(values) if models and self.baseline_channel else None
            ref_out = self.reference.outputs(values, seed, label)
            out_bytes = sum(t.numel() * t.element_size() for t in tensors(ref_out))
            res = self.channel.call(staged, "main", ref_out, seed, Stage.TIME)
            self._verify_timed(checks, res, values, ref_out, label)
            if timed:
                samples["main"].append((res.wall_ms, res.reply.ms))
                batch.append(res.reply.ms)
            with self.channel.sandbox.paused():  # the candidate cannot run beside its baselines
                for model_id in models:
                    assert self.baseline_channel is not None
                    if staged_b is None:  # the inputs again (re-drawn where the reference changes its inputs)
                        again = draw(loaded.main.get_inputs, draw_seed) if checks.reference_mutates else values
                        staged_b = self.baseline_channel.stage_inputs(again)
                    try:
                        b = self.baseline_channel.call(staged_b, model_id, ref_out, seed, Stage.TIME)
                    except SandboxError as e:
                        judge.baseline = None
                        raise HarnessFault(f"the reference sandbox failed while timing the baselines: {e}") from None
                    staged_b = None
                    if b.reply.ok and timed and self._baseline_right(b, model_id, values, ref_out, label):
                        samples[model_id].append((b.wall_ms, b.reply.ms))
            if batch and time.monotonic() - last_sent > 0.25:
                judge.send({"t": "trials", "ms": list(batch)})
                batch.clear()
                last_sent = time.monotonic()
        if batch:
            judge.send({"t": "trials", "ms": list(batch)})
        r.stages.time_s = time.perf_counter() - t0
        return samples, out_bytes

    def _baseline_right(self, res: Any, model_id: str, values: list[Any], ref_out: Any, label: str) -> bool:
        """A baseline trial counts only if its output is the reference's: a baseline whose compiled
        code was swapped for something faster and wrong (a poisoned cache) times nothing."""
        scratch = Observations()
        out = candidate_output(res, ref_out, tensor_leaves(values), label, scratch)
        noise = self._checks.timing_noise if self._checks is not None else {}
        m = None if out is None else compare_outputs(out, ref_out, self.cfg.tolerances, label, noise.get)
        if out is not None and m is None:
            return True
        name = "torch.compile" if model_id == "compiled" else "eager"
        why = m.note if m is not None else (scratch.mismatch.note if scratch.mismatch else "no output")
        self.obs.find("baseline_wrong", f"the {name} baseline's output on {label} is not the reference's ({why}): "
                                        "that trial is not counted", "warn")
        return False

    def _time_baselines_alone(self, bs: BaselineSandbox) -> dict[str, list[tuple[float, float]]]:
        """A few more baseline rounds once the candidate's sandbox is gone: what the baselines cost
        when nothing of the candidate's (a process, queued device work) can run beside them."""
        assert self.baseline_channel is not None
        self.judge.stage(Stage.BASELINE)
        samples: dict[str, list[tuple[float, float]]] = {m: [] for m in self._baseline_models(bs)}
        for i in range(max(ALONE_MIN_ROUNDS, int(self.cfg.trials) // 4)):
            label = f"baseline round {i + 1} alone"
            draw_seed, seed = fresh_seed(), fresh_seed()
            values = draw(self.loaded.main.get_inputs, draw_seed)
            staged = {m: self.baseline_channel.stage_inputs(values) for m in list(samples)[:1]}
            ref_out = self.reference.outputs(values, seed, label)
            for model_id in samples:
                again = staged.pop(model_id, None) or self.baseline_channel.stage_inputs(
                    draw(self.loaded.main.get_inputs, draw_seed) if self._mutates else values)
                try:
                    b = self.baseline_channel.call(again, model_id, ref_out, seed, Stage.BASELINE)
                except SandboxError as e:
                    self.judge.baseline = None
                    raise HarnessFault(f"the reference sandbox failed while timing the baselines: {e}") from None
                if b.reply.ok and self._baseline_right(b, model_id, values, ref_out, label):
                    samples[model_id].append((b.wall_ms, b.reply.ms))
        return samples

    def _verify_timed(self, checks: CheckRun, res: Any, values: list[Any], ref_out: Any, label: str) -> None:
        reply = res.reply
        if not reply.ok:
            raise CandidateFailed(f"ModelNew.forward raised on {label}: {reply.message}", reply.kind)
        record_notes(res, label, self.obs)
        checks.note_launches(reply.launches, label)
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
        if self.obs.rejected:
            raise Stop()

    def _record_times(self, samples: dict[str, list[tuple[float, float]]],
                      alone: dict[str, list[tuple[float, float]]], out_bytes: int) -> None:
        r, bs = self.result, self.judge.baseline
        cand = samples["main"]
        r.timings = [round(ms, 6) for _, ms in cand]
        r.runtime_spread = spread([ms for _, ms in cand])
        r.runtime_ms = r.runtime_spread.median_ms if r.runtime_spread else None
        eager, compiled = samples.get("eager", []), samples.get("compiled", [])
        r.ref_spread = self._undisturbed("eager", eager, alone.get("eager", []))
        r.compile_ref_spread = self._undisturbed("torch.compile", compiled, alone.get("compiled", []))
        r.ref_runtime_ms = r.ref_spread.median_ms if r.ref_spread else None
        r.compile_ref_runtime_ms = r.compile_ref_spread.median_ms if r.compile_ref_spread else None
        if r.runtime_ms and r.runtime_ms > 0:
            if r.ref_runtime_ms:
                r.speedup_eager = r.ref_runtime_ms / r.runtime_ms
            if r.compile_ref_runtime_ms:
                r.speedup_compile = r.compile_ref_runtime_ms / r.runtime_ms
        floor_ms = out_bytes / self.judge.bandwidth() * 1e3
        figures, message = clock_check(self.device, cand, eager + compiled, floor_ms)
        r.clock = figures
        if message:
            self.obs.find("clock", message)
        if bs is not None and bs.compile_note and self.cfg.time_compile_baseline:
            self.obs.find("compile_baseline", f"no torch.compile baseline: {bs.compile_note}", "warn")

    def _undisturbed(self, name: str, beside: list[tuple[float, float]], alone: list[tuple[float, float]]) -> Any:
        """The spread of a baseline as timed beside the candidate, unless its rounds timed alone
        afterwards show it was disturbed there: then the alone figures (and a finding naming both)."""
        interleaved, clean = spread([ms for _, ms in beside]), spread([ms for _, ms in alone])
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
