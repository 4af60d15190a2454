"""The judge: one evaluation request from start to verdict, in a process that never imports or
runs candidate code.

It owns the loaded problem, the reference model (built under the construction seed as
KernelBench builds it) and its float64 copy, every input set (from seeds drawn with `secrets`
per evaluation, never sent anywhere), the reference outputs, every comparison, the clock, the
baselines, the verdict and the EvalResult. The candidate runs in a fresh sandbox forked from the
zygote (never reused for another candidate); the baselines run in a reference sandbox that
never ran candidate code, kept per loaded problem.

Order: build (sandbox) -> construct and check (units of device memory by the size of its inputs,
the device lock shared) -> prepare the baselines (build and torch.compile unlocked, warm-up
shared) -> timed runs of candidate, eager, compiled calls on fresh inputs, every candidate trial
verified (on a GPU each run with the device alone, the judge's work between runs shared; on the
CPU the device alone throughout) -> the clock rules on them -> the work check, in runs as long, with
custom kernels switched off (shared) -> the baselines alone -> verdict. Any reject-level finding
changes the verdict.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import re
import shutil
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from htam_engine.evaluate import cache, gpu_holders, owned_tree, wire
from htam_engine.evaluate.build_record import BuildRecords
from htam_engine.evaluate.channel import Channel
from htam_engine.evaluate.checks.observe import Observations
from htam_engine.evaluate.checks.sequence import CandidateFailed, CheckRun, HarnessFault, Stop
from htam_engine.evaluate.clock import copy_bandwidth
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.devicelock import DeviceLock, evaluation_need
from htam_engine.evaluate.diagnostics import one_line, parse_compiler_output, trim_log
from htam_engine.evaluate.limits import file_limit_note
from htam_engine.evaluate.memory_history import MemoryHistory
from htam_engine.evaluate.reference import BaselineSandbox, ReferenceFailed, ReferenceModel
from htam_engine.evaluate.oom import is_out_of_memory, out_of_memory_text
from htam_engine.evaluate.result import CompilerMessage, EvalResult, Finding, Mismatch, Status
from htam_engine.evaluate.rounds import BASELINE_PREP_S, Samples, TimedRounds
from htam_engine.evaluate.sandbox_client import (Budget, HarnessStartError, SandboxDied, SandboxError, SandboxMemory,
                                                 SandboxLimits, SandboxProcess, SandboxProtocol, SandboxTimeout,
                                                 ZygoteProcess, fork_sandbox)
from htam_engine.evaluate.shared import NoPrivatePool
from htam_engine.evaluate.stages import Stage
from htam_engine.problems.loader import LoadedProblem, load_for_judge
from htam_engine.problems.model import ProblemError

Send = Callable[[dict[str, Any]], None]
# torch's message when ninja/the compiler failed (as opposed to a Python error at import).
_BUILD_FAILED = "Error building extension"
# Build failures that may be the machine's, not the candidate's: the judge then looks at the
# machine itself (missing_build_tools); the sandbox's words alone never decide it.
_ENVIRONMENT = re.compile(r"nvcc: not found|No such file or directory: '?(nvcc|c\+\+|g\+\+|ninja)|CUDA_HOME environment"
                          r"|Ninja is required|command not found: (nvcc|c\+\+)|cannot find -lcudart", re.I)
_SANDBOX_START_S = 300.0
_KEPT_PROBLEMS = 2
# Build failures a judge remembers (the most recent; each a trimmed log).
_KEPT_FAILURES = 256


def missing_build_tools(code: str, backend: str, device: str, env: dict[str, str]) -> list[str]:
    """The build tools this candidate needs that the sandboxes' environment lacks, as the judge
    finds them (its own look at the machine, never the candidate's message): a C++ compiler and
    ninja for an extension, nvcc, the CUDA runtime library and a CUDA build of torch for CUDA
    sources, a C compiler for Triton on a GPU (its launcher is compiled)."""
    import shutil

    from htam_engine.evaluate.backend import _CPP, _CUDA

    path = env.get("PATH", os.defpath)
    missing: list[str] = []

    def need(name: str) -> None:
        if shutil.which(name, path=path) is None and name not in missing:
            missing.append(name)

    cuda = backend == "cuda" or bool(_CUDA.search(code))
    if cuda or backend == "cpp" or _CPP.search(code):
        need((env.get("CXX") or "c++").split()[0])
        need("ninja")
    if cuda and torch.version.cuda is None:  # a CPU build of torch builds no CUDA extension, nvcc or not
        missing.append(f"a CUDA build of torch (torch {torch.__version__} is CPU-only)")
    if cuda:
        home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
        if home:
            if not os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
                missing.append(os.path.join(home, "bin", "nvcc"))
            if not any(os.path.exists(os.path.join(home, lib, "libcudart.so")) for lib in ("lib64", "lib")):
                missing.append(f"libcudart.so under {home}")
        else:
            need("nvcc")
    if backend == "triton" and device.startswith("cuda"):
        if not any(shutil.which(c, path=path) for c in (env.get("CC") or "cc", "gcc", "clang")):
            missing.append("a C compiler (cc, gcc, clang)")
    return missing


def worth_running_alone(result: EvalResult) -> bool:
    """Whether a failure beside other evaluations may be the device's memory, not the candidate:
    the harness's own faults (its out-of-memory, a reference sandbox that died) and a candidate's
    out-of-memory. A sandbox killed for the device's memory dies without saying why."""
    if result.status is Status.HARNESS_ERROR:
        return True
    return result.status is Status.RUNTIME_ERROR and out_of_memory_text(result.diagnostics.message)


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
                f"has {total / gib:.1f} GiB (a harness capacity limit, not the candidate's fault)"
                f"{gpu_holders.described()}")
    import psutil

    return (f"the judge ran out of host memory: the machine has {psutil.virtual_memory().total / gib:.1f} GiB "
            "(a harness capacity limit, not the candidate's fault)")


def warm_meta_ops() -> None:
    """Take the imports of torch's first meta-device operations now (sympy, torch._dynamo: 2-3 s
    of a fresh judge's first load of a problem on the H200 box otherwise)."""
    with contextlib.suppress(Exception), torch.device("meta"):
        (torch.randn(2, 2) * 2.0 + 1.0).relu()


def warm_device(device: str) -> None:
    """The CUDA context and the kernels every check uses, at judge start, not holding units of its memory."""
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


def reset_gpu_peak(device: str) -> None:
    """The judge's GPU memory peak counts from here (one evaluation at a time per judge)."""
    if device.startswith("cuda"):
        with contextlib.suppress(Exception):
            torch.cuda.reset_peak_memory_stats(torch.device(device))


def gpu_peak(device: str) -> tuple[float | None, float | None]:
    """(allocated, reserved) peak GiB of the judge process since reset_gpu_peak; None on the CPU."""
    if not device.startswith("cuda"):
        return None, None
    try:
        dev = torch.device(device)
        gib = float(1 << 30)
        return torch.cuda.max_memory_allocated(dev) / gib, torch.cuda.max_memory_reserved(dev) / gib
    except Exception:  # noqa: BLE001 - no CUDA after all: nothing measured
        return None, None


@dataclass(frozen=True, slots=True)
class BuildFailure:
    """A build that failed in the compiler: the same source fails the same way, so the judge that
    saw it does not build it again. Kept in the judge's memory only: a record on disk is a file
    every sandbox can write, and a forged one would fail an honest candidate."""

    message: str
    compiler: tuple[CompilerMessage, ...]
    log: str


class Judge:
    """One per judge process: the zygote, a spare sandbox, the loaded problems and baselines."""

    def __init__(self, device: str, send: Send, env: dict[str, str] | None = None,
                 zygote: ZygoteProcess | None = None):
        """env: the sandboxes' environment (default: this process's, which the engine scrubbed).
        zygote: one already launched (the judge's process starts it before importing torch)."""
        self.device = device
        self.send = send
        self.env = dict(os.environ if env is None else env)
        self.zygote = zygote or ZygoteProcess(dict(self.env))
        self.zygote_error = ""
        try:
            if self.zygote.proc is None:
                self.zygote.launch()
        except HarnessStartError as exc:
            self.zygote_error = str(exc)
        warm_device(device)  # while the zygote imports
        # The clock rule's floor (clock.copy_bandwidth), measured before any candidate runs: measured
        # during the first evaluation, a candidate's helper stopping this process between copies
        # (same user) had cut it 5-11x for every later candidate of this judge.
        try:
            self.bandwidth = copy_bandwidth(device)
        except Exception:  # noqa: BLE001 - a device this process cannot use: no floor (its evaluations fail anyway)
            self.bandwidth = math.inf
        self.memory_history = MemoryHistory(device)  # one per judge: its snapshots are numbered in turn
        self.working_stage = Stage.START  # the stage a wait for the device interrupts (resume_stage)
        self.lock = DeviceLock(device, os.environ.get("HTAM_WORKER_LOCK") or f"time-{device.replace(':', '')}",
                               lambda stage: self.stage(Stage(stage)), resume=self.resume_stage)
        if not self.zygote_error:
            try:
                self.zygote.wait_ready()
            except HarnessStartError as exc:
                self.zygote_error = str(exc)
        self._spare: SandboxProcess | None = None
        self.problems: collections.OrderedDict[str, tuple[LoadedProblem, ReferenceModel | None]] = \
            collections.OrderedDict()
        self.baseline: BaselineSandbox | None = None
        self.build_failures: collections.OrderedDict[str, BuildFailure] = collections.OrderedDict()  # by key
        self.build_records = BuildRecords()  # what the builds it asked for left in the shared cache
        self._fork_spare(SandboxLimits.of(EvalConfig(), device))  # the usual limits, until a request says

    # ------------------------------------------------------------------ helpers
    def stage(self, stage: Stage) -> None:
        if stage is not Stage.WAIT_LOCK:
            self.working_stage = stage
        self.send({"t": "stage", "stage": stage.value})

    def resume_stage(self) -> None:
        """The stage a wait for the device interrupted goes on (its time counts again)."""
        self.stage(self.working_stage)

    def _fork_spare(self, limits: SandboxLimits) -> None:
        if self.zygote_error:
            return
        try:
            self._spare = fork_sandbox(self.zygote, "candidate", self.device, limits)
        except HarnessStartError as exc:
            self._spare, self.zygote_error = None, str(exc)
            return
        try:
            # Ready now, before the candidate handed the sandbox beside it runs: its limits and
            # scheduling are read as its own (procstate), to be compared at handover.
            self._spare.wait_ready(_SANDBOX_START_S)
        except SandboxError:
            self._drop_spare()

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
        if sandbox is not None:
            sandbox.continue_()  # the last candidate may have stopped its sibling, the spare
        # A spare forked by a zygote that has died since (a candidate may kill its parent) dies
        # with it, perhaps not yet: it is not handed to the next candidate. The next spare's fork
        # is the test: a round trip a dying zygote cannot answer, where a SIGKILLed zygote still
        # read as running (poll) while it exited, and under load the spare it had forked was handed
        # to the next, honest candidate and died in its compile.
        self._fork_spare(limits)
        orphaned = self._spare is None or not self.zygote.alive()
        if sandbox is None or orphaned or not sandbox.alive() or sandbox.limits != limits or sandbox.tampered():
            if sandbox is not None:
                sandbox.kill()
            try:
                sandbox = fork_sandbox(self.zygote, "candidate", self.device, limits)  # restarts a dead zygote
            except HarnessStartError as exc:
                raise HarnessFault(str(exc)) from None
            if self._spare is None:
                self.zygote_error = ""  # the zygote answered again: the next request forks a spare
        return sandbox

    def sibling_tamper(self) -> str:
        """What changed in the zygote's, the spare's or the reference sandbox's limits or
        scheduling since each said it was ready ("" where nothing): a changed one is discarded, so
        no later evaluation runs in it or is timed against it. A changed zygote takes the sandboxes
        forked from it along (they inherited the change before their own state was read); the next
        fork starts a new one."""
        said = []
        if changed := self.zygote.tampered():
            said.append(f"the zygote: {changed}")
            self._drop_spare()
            self._drop_baseline()
            self.zygote.kill()
        if self._spare is not None and (changed := self._spare.tampered()):
            said.append(f"the spare sandbox: {changed}")
            self._drop_spare()
        if self.baseline is not None and (changed := self.baseline.sandbox.tampered()):
            said.append(f"the reference sandbox: {changed}")
            self._drop_baseline()
        return "; ".join(said)

    def _drop_spare(self) -> None:
        if self._spare is not None:
            self._spare.kill()
            self._spare = None

    def _drop_baseline(self) -> None:
        if self.baseline is not None:
            self.baseline.close()
            self.baseline = None

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

    def remember_build_failure(self, key: str, failure: BuildFailure) -> None:
        self.build_failures[key] = failure
        self.build_failures.move_to_end(key)
        while len(self.build_failures) > _KEPT_FAILURES:
            self.build_failures.popitem(last=False)

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
                                BASELINE_PREP_S)
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
        lock = self.lock
        lock.last_units = 0  # what this evaluation takes (none if it fails before its checks)
        lock.waited_s = lock.alone_s = 0.0
        result, healthy = ev.run()
        if healthy and worth_running_alone(result) and lock.shared_with_others() and not lock.held_alone:
            # Beside other evaluations the device ran out; alone it may fit (a batch at KernelBench's
            # official sizes on an H200: four judges of ~80 GiB each). Only what fails alone counts.
            first = result
            # who filled the device, read before this evaluation takes it alone (the others still hold theirs)
            held = gpu_holders.described() if self.device.startswith("cuda") else ""
            release_memory(self.device)
            with lock.alone():
                ev = Evaluation(self, problem, code, config, backend, key, memory_mb)
                result, healthy = ev.run()
            # Said, not silent: alone, it held every other evaluation up for its whole length.
            result.integrity.append(Finding("ran_alone", f"beside other evaluations it ended {first.status.value} "
                                                         f"({first.diagnostics.message}){held}: evaluated again "
                                                         "with the device alone", "warn"))
        # every wait and hold of both runs, the alone one's included (counted once it let go)
        result.stages.lock_wait_s, result.stages.device_alone_s = lock.waited_s, lock.alone_s
        return result, healthy

    def close(self) -> None:
        self._drop_spare()
        self._drop_baseline()
        self.zygote.close()


class Evaluation(TimedRounds):
    """One request: build, checks, timed rounds (rounds.py), verdict."""

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
        self._checks: CheckRun | None = None
        self.per_run = 1  # calls in one timed run (rounds.trials_per_run), set once the first set is drawn

    # ------------------------------------------------------------------ the whole request
    def run(self) -> tuple[EvalResult, bool]:
        started = time.perf_counter()
        r = self.result
        reset_gpu_peak(self.device)
        history = self.judge.memory_history
        history.start()
        self.judge.lock.waiting = self._candidate_stopped
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
            if is_out_of_memory(e):
                self._fail(Status.HARNESS_ERROR, capacity_message(e, self.device))
            else:
                self._fail(Status.HARNESS_ERROR, f"the judge failed: {one_line(e)}")
                r.diagnostics.log = trim_log(traceback.format_exc())
                self.healthy = False
        finally:
            self.judge.lock.waiting = contextlib.nullcontext
            self._close()
        self._watch_siblings()
        self._weigh_build()
        self._conclude()
        r.stages.gpu_peak_allocated_gib, r.stages.gpu_peak_reserved_gib = gpu_peak(self.device)
        history.dump()
        r.stages.total_s = time.perf_counter() - started
        return r, self.healthy

    def _candidate_stopped(self) -> contextlib.AbstractContextManager[Any]:
        """DeviceLock.waiting: the candidate's processes stopped while this judge waits for a lock
        or units. Let run, they loaded the machine under another judge's timed runs while waiting
        for the timing lock (two processes spinning only while their own forward was idle: an
        honest candidate of the other judge timed 45 % slower, no finding on either; red-team pass
        29); they have nothing to do while their judge waits."""
        channel = self.channel
        if channel is None or channel.sandbox.dead:
            return contextlib.nullcontext()
        return channel.sandbox.paused()

    def _fail(self, status: Status, message: str) -> None:
        r = self.result
        if r.status is Status.OK:  # the first failure names the evaluation
            r.status, r.correct = status, False
            file_mb = SandboxLimits.of(self.cfg, self.device).file_mb  # what its sandbox was started under
            r.diagnostics.message = message + file_limit_note(message, file_mb)

    def _watch_siblings(self) -> None:
        """Once the candidate's processes are gone, the sandboxes beside its own must be as they
        were: a process of the same user can lower their limits or priority from outside."""
        changed = self.judge.sibling_tamper()
        if changed:
            self.obs.find("sibling_tamper", f"while the candidate ran, the limits or scheduling of the processes "
                                            f"beside its own changed ({changed}): they are replaced")

    def _weigh_build(self) -> None:
        """Once the candidate's processes are gone, its build folder must hold a build: past
        cache.BUILD_FOLDER_MAX_BYTES or _ENTRIES it is files left to fill the disk under later
        evaluations, and goes (the next evaluation of this source builds it again)."""
        folder = cache.cache_dir() / cache.BUILD / self.key
        bounds = (cache.BUILD_FOLDER_MAX_BYTES, cache.BUILD_FOLDER_MAX_ENTRIES)
        used, entries = cache.folder_usage(folder, stop_past=bounds)
        if used <= bounds[0] and entries <= bounds[1]:
            return
        owned_tree.remove(folder)
        self.obs.find("files_left", f"once it ended, its build folder in the shared cache held at least "
                                    f"{used / 2**20:.0f} MB in {entries} files, where a build leaves a few MB "
                                    f"(at most {bounds[0] >> 20} MB and {bounds[1]} files): removed")

    def _conclude(self) -> None:
        """The verdict from everything recorded: reject findings win, then failures, mismatches."""
        r, obs = self.result, self.obs
        r.integrity = list(obs.findings)
        r.diagnostics.mismatch = obs.mismatch
        rejects = [f for f in obs.findings if f.severity == "reject"]
        # A harness error too: a candidate that broke the judge's sandboxes beside its own (its
        # reference sandbox capped, say) meets the harness failing, and the finding names why.
        if rejects and r.status in (Status.OK, Status.INCORRECT, Status.RUNTIME_ERROR, Status.COMPILE_ERROR,
                                    Status.HARNESS_ERROR):
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
        failed = judge.build_failures.get(self.key)
        if failed is not None:
            self._replay_failure(failed)
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
        self._build()
        r.stages.compile_s = time.perf_counter() - t0
        init = list(loaded.main.get_init_inputs())
        # the units of device memory its peak needs, from its input sets' layouts (drawn on meta)
        need = evaluation_need(loaded.input_layouts, loaded.unseen_input_layouts, loaded.unseen is not None)
        with judge.lock.holding_state(need):
            checks = self._checks = self._check(loaded, reference, init)
            if self.obs.rejected or _verdict(self.obs.findings, self.obs.mismatch)[0] is not Status.OK:
                return
            r.correct = True
            with judge.lock.checking():  # one run on garbage before timing (sequence.check_kernels_before_timing)
                checks.check_kernels_before_timing()
            if self.obs.rejected:
                return
            # The candidate's processes are stopped while the reference sandbox compiles: they
            # cannot write into its compile caches (zygote._private_compile_caches) meanwhile.
            with self.reference_runs():
                baseline = self._prepare_baselines(loaded, init)
            with judge.lock.timed_stage():
                samples, out_bytes = self._time(checks, baseline)
            self._check_clocks(samples, out_bytes)
            if self._convicted_by_the_clock_alone():
                # A conviction by the judge's clock stands on two timings: on a loaded CPU an honest
                # candidate's wake-ups sometimes cost it 20+ ms a trial more than its reference's
                # (1 evaluation in 20 with two beside each other on 2 cores). A forged time fails both.
                self.obs.findings = [f for f in self.obs.findings if f.rule != "clock"]
                with judge.lock.timed_stage():
                    samples, out_bytes = self._time(checks, baseline)
                self._check_clocks(samples, out_bytes)
            if not self.obs.rejected:  # a forged time settled the verdict: no work check to pay for
                with judge.lock.checking():
                    judge.stage(Stage.CHECK)
                    checks.check_kernels_did_the_work(self.per_run)  # as long as the timed runs
            alone: Samples = {}
            if not self.obs.rejected and baseline is not None:
                self.channel.sandbox.kill()  # nothing of the candidate's is left to disturb them
                self.channel.close_after_death()  # nor its shared storages, during the rounds alone
                with judge.lock.timed_stage():
                    alone = self._time_baselines_alone(baseline)
            self._record_times(samples, alone)

    def _build(self) -> None:
        assert self.channel is not None
        r = self.result
        self.judge.stage(Stage.COMPILE)
        with self._holding_build_lock():
            if not self.judge.build_records.check(self.key):
                self.obs.find("build_cache_changed", "the libraries an earlier build of this source left in the "
                                                     "shared build cache had changed since (another candidate's "
                                                     "sandbox can write there): built anew", "warn")
            reply = self.channel.request(wire.Build(self.channel.next_seq(), self.code, self.key, self.backend),
                                         Stage.COMPILE, deadline_s=None)
            if not isinstance(reply, wire.Outcome):
                raise SandboxProtocol(Stage.COMPILE, f"a {type(reply).__name__} in answer to a build")
            if reply.ok:
                self.judge.build_records.record(self.key)
        r.stages.compile_cached = reply.compile_cached
        self.extension_ops = reply.extension_ops
        if reply.ok:
            return
        r.diagnostics.compiler = list(reply.compiler)
        r.diagnostics.log = reply.log
        # The candidate writes the failure's text (it can raise any message it likes), so the text
        # only makes the judge look: a harness error needs a build tool the judge finds missing.
        missing = missing_build_tools(self.code, self.backend, self.device, self.judge.env) \
            if _ENVIRONMENT.search(reply.log or reply.message) else []
        if missing:
            self._fail(Status.HARNESS_ERROR, f"the machine cannot build this candidate: the sandboxes' environment "
                                             f"has no {', '.join(missing)} ({reply.message})")
            raise Stop()
        self._fail(Status.COMPILE_ERROR, reply.message)
        if _BUILD_FAILED in reply.log:
            self.judge.remember_build_failure(self.key, BuildFailure(r.diagnostics.message,
                                                                     tuple(r.diagnostics.compiler), r.diagnostics.log))
        raise Stop()

    @contextlib.contextmanager
    def _holding_build_lock(self) -> Iterator[None]:
        """The key's build lock, held by the judge while its sandbox builds and imports. No sandbox
        takes a lock of htam's (seccomp.py refuses it a record lock): where the sandbox took this
        one, a process of its could keep it, one whose taker had exited unnamed in /proc/locks,
        and another judge's honest candidate timed out waiting for it in its compile (red-team
        pass 28). A wait for another judge's build of the same source is no time of this
        candidate's."""
        name = cache.build_lock_name(self.key)
        held = cache.try_file_lock(name)
        if held is None:
            self.judge.stage(Stage.WAIT_LOCK)
            held = cache.take_file_lock(name)
            self.judge.resume_stage()
        try:
            yield
        finally:
            cache.release_file_lock(held)

    def _replay_failure(self, failed: BuildFailure) -> None:
        """Fill the result from this judge's own record of this exact source's build failure."""
        self._fail(Status.COMPILE_ERROR, failed.message)
        self.result.diagnostics.compiler = list(failed.compiler)
        self.result.diagnostics.log = failed.log
        self.result.stages.compile_cached = True

    def _check(self, loaded: LoadedProblem, reference: ReferenceModel | None, init: list[Any]) -> CheckRun:
        """Construct both models, compare their parameters, run the checked calls (beside other
        checkers). A check that ran out of memory there is checked again with the device alone."""
        try:
            with self.judge.lock.checking():
                return self._check_once(loaded, reference, init)
        except CandidateFailed as e:
            if not (self.judge.lock.shared_with_others() and out_of_memory_text(str(e))):
                raise
        except Exception as e:  # noqa: BLE001 - the judge's own out-of-memory, beside other checkers
            if not (self.judge.lock.shared_with_others() and is_out_of_memory(e)):
                raise
        self.obs = Observations()
        assert self.channel is not None
        self.channel.sandbox.kill()
        self.channel.close_after_death()
        release_memory(self.device)
        self.channel = Channel(self.judge.candidate_sandbox(SandboxLimits.of(self.cfg, self.device)), self.device,
                               self.memory_mb, self.budget, self.judge.stage)
        self._build()
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
        self.channel.reserve_inputs(loaded.input_layouts, loaded.unseen_input_layouts)  # one storage a slot
        checks = CheckRun(self.channel, loaded, reference, self.cfg, self.obs, self.device, judge.lock.let_timers_in)
        checks.extension_ops = self.extension_ops
        try:
            self._compare_parameters(checks.construct("main", init), reference.prints)
            checks.run(init)
        finally:
            reference.drop_exact()
            r.stages.check_s = time.perf_counter() - t0
            r.stages.first_call_s = (self.channel.first_run_ms or 0.0) / 1e3
        return checks

    def _convicted_by_the_clock_alone(self) -> bool:
        rejects = {f.rule for f in self.obs.findings if f.severity == "reject"}
        return rejects == {"clock"} and self.obs.mismatch is None

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
