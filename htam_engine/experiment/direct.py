"""Direct measurement, for the experiment's own candidates: KernelBench's way, in a few processes.

The ablation experiment needs hundreds of distinct kernels timed at KernelBench's official
sizes. Through the judge each costs 5-20 s of the device (its checks, its reference sandbox,
its exclusive timing of both baselines with fresh inputs every trial): one 30-minute H200
session measured 50 of the ~550 the runs ask for. The experiment's candidates are the offline
proposer's, htam's own code, not a model's, so nothing in them attacks a harness; what the
experiment needs from a measurement is the kernel's time and whether it is right.

DirectPool measures a candidate as KernelBench's eval does, in a long-lived worker process
that imports it beside the problem's reference model (both built from the same seed):
its output compared with the reference's on `correctness_trials` input sets drawn from fixed
seeds (the judge's comparison and tolerances, checks/compare.py, with its float64 noise floor for
outputs at rounding-noise level), then `warmup` + `trials`
calls on one set, each through the judge's sandbox protocol (timing.run_trial: on CUDA an L2
flush and events around the call). The eager reference is timed the same way once per
problem and shared by every candidate of it, and with compile_baseline so is torch.compile's
(the judge's baseline: torch.compile(Model) in its default mode, its output held to the judge's
baseline tolerance). Timing holds a lock across the workers; device
memory is admitted from a shared budget, so a 6 GiB problem does not meet eleven others.

It is never a verdict on untrusted code: a report made with it names it as its evaluator.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any

from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import Diagnostics, EvalResult, Mismatch, Status, StageTimes
from htam_engine.problems.model import Problem

NAME = "direct measurement (KernelBench's protocol, for the offline proposer's own candidates)"
# Device memory an evaluation is admitted for: this many times its input set (the set, the
# reference's output, the candidate's, and the temporaries between them) plus a fixed allowance
# for parameters and workspaces. An output is taken as large as the inputs, as in devicelock.
NEED_FACTOR = 5
NEED_ALLOWANCE_BYTES = 1 << 30
# Each worker's CUDA context, caching allocator slack and L2 flush buffer, outside the budget.
WORKER_RESERVE_BYTES = 3 << 29
# The seed of the timed input set; correctness sets use 1..correctness_trials.
TIMING_SEED = 0
# How long a worker waits for the device before its measurement is given up (a worker stuck
# inside a kernel holds it; the others must not wait for ever).
DEVICE_WAIT_S = 600.0
# A CUDA error leaves the worker's context unusable: the worker reports it, then exits, and the
# pool starts fresh workers. Measurements caught in the restart are retried this many times.
RETRIES = 2
# The parent's own limit on a measurement, as a multiple of its timeout: the worker's alarm ends a
# candidate that runs too long (counted from when the worker took it, not from the queue); this
# is for a worker stuck where no alarm reaches (inside a kernel, a blocked C call).
BACKSTOP_FACTOR = 4


def pool_size(device: str) -> int:
    """Measuring processes for a device: on a GPU the cores a quarter left to proposing leaves (the
    timing is exclusive, so more processes only overlap checks and compiles); on the CPU two, each
    timing with one thread while the other checks."""
    cores = os.cpu_count() or 1
    return max(1, cores - cores // 4) if device.startswith("cuda") else min(2, cores)


class _TimedOut(BaseException):
    """Raised by the worker's alarm: a BaseException, so no `except Exception` swallows it."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _TimedOut()


_CUDA_FAULTS = ("CUDA error", "illegal memory access", "device-side assert", "CUBLAS_STATUS", "cudaError")


class Subject(enum.Enum):
    """What a job measures."""

    CANDIDATE = "candidate"  # the job's code, its ModelNew
    EAGER = "eager"  # the problem's Model as written
    COMPILED = "torch.compile"  # torch.compile(Model), the judge's second baseline


@dataclass(frozen=True, slots=True)
class Job:
    """One measurement, as sent to a worker (pickled)."""

    problem: Problem
    code: str | None  # the candidate's source (Subject.CANDIDATE only)
    config: EvalConfig
    subject: Subject = Subject.CANDIDATE


class SharedExclusive:
    """Checks beside each other, timing alone (the judge's devicelock, across one pool's workers):
    a waiting timer lets no new checker in, so a stream of checks cannot starve it."""

    def __init__(self, ctx: Any):
        self._cond = ctx.Condition()
        self._readers = ctx.Value("i", 0, lock=False)
        self._writer = ctx.Value("i", 0, lock=False)  # 1: waiting or holding

    def _wait(self, ready: Any) -> None:
        if not self._cond.wait_for(ready, DEVICE_WAIT_S):
            raise TimeoutError(f"the device was not free within {DEVICE_WAIT_S:.0f} s")

    def acquire(self, exclusive: bool) -> None:
        with self._cond:
            self._wait(lambda: not self._writer.value)
            if not exclusive:
                self._readers.value += 1
                return
            self._writer.value = 1
            try:
                self._wait(lambda: not self._readers.value)
            except BaseException:
                self._writer.value = 0
                self._cond.notify_all()
                raise

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._writer.value = 0
            else:
                self._readers.value -= 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def held(self, exclusive: bool):
        self.acquire(exclusive)
        try:
            yield
        finally:
            self.release(exclusive)

    def shared(self):
        return self.held(exclusive=False)

    def exclusive(self):
        return self.held(exclusive=True)


class DeviceBudget:
    """Bytes of device memory the pool's workers take and give back (one condition across them)."""

    def __init__(self, ctx: Any, total: int):
        self.total = total
        self._cond = ctx.Condition()
        self._free = ctx.Value("q", total, lock=False)

    def take(self, need: int) -> int:
        """Blocks until `need` bytes (all of them at most) are free; returns what it took."""
        take = min(need, self.total)
        with self._cond:
            self._cond.wait_for(lambda: self._free.value >= take)
            self._free.value -= take
        return take

    def give(self, taken: int) -> None:
        with self._cond:
            self._free.value += taken
            self._cond.notify_all()


# ---------------------------------------------------------------------- the worker's side
_state: dict[str, Any] = {}


def _init_worker(lock: SharedExclusive, budget: DeviceBudget | None, device: str, cpu_threads: int | None) -> None:
    _state.update(lock=lock, budget=budget, device=device, flusher=None)
    if cpu_threads and not device.startswith("cuda"):  # as the judge's sandboxes: HTAM_WORKER_CPU_THREADS
        import torch

        torch.set_num_threads(cpu_threads)
    if device.startswith("cuda"):
        import torch

        from htam_engine.evaluate.timing import L2Flusher

        if torch.device(device).index is not None:  # "cuda" alone is the current device already
            torch.cuda.set_device(torch.device(device))
        torch.cuda.init()
        # KernelBench's single write: in this process the forward's launch is as hot as in its loop, and
        # the table's rows, measured so from the start, stay comparable
        _state["flusher"] = L2Flusher(device, writes=1)


@contextlib.contextmanager
def _waiting():
    """The job's alarm stopped while it waits for others (the device, memory): its timeout is its own time."""
    left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left:
            signal.setitimer(signal.ITIMER_REAL, left)


@contextlib.contextmanager
def _device(exclusive: bool):
    """The device lock taken shared (checks) or exclusive (timing), the wait not counted against the job."""
    with _waiting():
        _state["lock"].acquire(exclusive)
    try:
        yield
    finally:
        _state["lock"].release(exclusive)


@contextlib.contextmanager
def _admitted(need: int):
    """`need` bytes of the shared device budget (all of it at most), held for the block."""
    budget: DeviceBudget | None = _state["budget"]
    if budget is None:
        yield
        return
    with _waiting():
        taken = budget.take(need)
    try:
        yield
    finally:
        budget.give(taken)


def _draw(instance: Any, seed: int) -> list[Any]:
    from htam_engine.evaluate.seeding import seed_all

    seed_all(seed)
    return instance.get_inputs()


def _time_calls(model: Any, inputs: list[Any], config: EvalConfig) -> list[float]:
    from htam_engine.evaluate.timing import run_trial

    device, flusher = _state["device"], _state["flusher"]
    times = []
    with _device(exclusive=True):
        for i in range(max(0, config.warmup) + max(1, config.trials)):
            ms = run_trial(model, inputs, device, 0.0, (), flusher).ms
            if i >= config.warmup:
                times.append(ms)
    return times


def _measure(job: Job) -> dict[str, Any]:
    """The EvalResult of one job, as a dict (the worker's only reply), within its timeout."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, job.config.timeout_s))
    try:
        return _measure_now(job)
    except _TimedOut:
        return EvalResult.failure(Status.TIMEOUT, f"no result within {job.config.timeout_s:.0f} s",
                                  device=_state["device"], backend=job.config.backend or "").to_dict()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        with contextlib.suppress(Exception):  # a context a CUDA fault broke: the worker is leaving anyway
            _release_device()


def _measure_now(job: Job) -> dict[str, Any]:
    from htam_engine.evaluate.cache import candidate_key
    from htam_engine.problems.loader import layouts_bytes, load_for_judge

    t0 = time.perf_counter()
    cfg, device = job.config, _state["device"]
    stages = StageTimes()

    def failed(status: Status, message: str, **kw: Any) -> dict[str, Any]:
        stages.total_s = time.perf_counter() - t0
        return replace(EvalResult.failure(status, message, device=device, backend=cfg.backend or "", **kw),
                       stages=stages).to_dict()

    try:
        loaded = load_for_judge(job.problem, device, check_unseen=False)
    except Exception as exc:  # noqa: BLE001 - the problem itself: the harness's fault
        return failed(Status.HARNESS_ERROR, f"the problem did not load: {exc}")
    instance = loaded.main
    model_cls = instance.Model
    if job.subject is Subject.CANDIDATE:
        import torch

        try:
            from htam_engine.evaluate.compile_cache import import_candidate

            module = import_candidate(job.code, candidate_key(job.code, cfg.backend or "", device.split(":")[0],
                                                              torch.__version__))
            model_cls = module.ModelNew
        except Exception as exc:  # noqa: BLE001 - anything raised while importing is a build outcome
            return failed(Status.COMPILE_ERROR, f"candidate failed to import: {_one_line(exc)}")
    stages.compile_s = time.perf_counter() - t0
    budget = _state["budget"]
    if loaded.input_layouts is not None:
        need = NEED_FACTOR * layouts_bytes(loaded.input_layouts) + NEED_ALLOWANCE_BYTES
    else:  # get_inputs cannot run on the meta device: half the budget, as devicelock's UNKNOWN_SHARE
        need = budget.total // 2 if budget is not None else 0
    with _admitted(need):
        return _checked_and_timed(job, instance, model_cls, stages, t0)


def _checked_and_timed(job: Job, instance: Any, model_cls: type, stages: StageTimes, t0: float) -> dict[str, Any]:
    import torch

    from htam_engine.evaluate.clock import spread
    from htam_engine.evaluate.reference import ReferenceModel
    from htam_engine.evaluate.rounds import baseline_tolerances
    from htam_engine.evaluate.seeding import seed_all

    cfg, device = job.config, _state["device"]
    init = list(instance.get_init_inputs())
    status, message, mismatch = Status.OK, "", None
    with torch.no_grad():
        try:
            seed_all(cfg.seed)  # the construction seed, as for the reference (KernelBench's rule)
            model = model_cls(*init).to(device)
            t1 = time.perf_counter()
            if job.subject is Subject.COMPILED:
                model = torch.compile(model)
            if job.subject is not Subject.EAGER:
                # torch.compile's own arithmetic is PyTorch's: held to the judge's baseline tolerance
                tolerances = baseline_tolerances(cfg.tolerances) if job.subject is Subject.COMPILED else cfg.tolerances
                mismatch = _check(model, ReferenceModel(instance.Model, init, cfg.seed, device), instance,
                                  replace(cfg, tolerances=tolerances))
            if mismatch is not None:
                status, message = Status.INCORRECT, f"output differs from the reference: {mismatch.note}"
            stages.check_s = time.perf_counter() - t1
            times: list[float] = []
            if status is Status.OK:
                t2 = time.perf_counter()
                times = _time_calls(model, _draw(instance, TIMING_SEED), cfg)
                stages.time_s = time.perf_counter() - t2
        except Exception as exc:  # noqa: BLE001 - the candidate's fault becomes a status
            if any(s in str(exc) for s in _CUDA_FAULTS):
                threading.Timer(0.5, os._exit, (3,)).start()  # the context is gone: leave after replying
            status, message = Status.RUNTIME_ERROR, f"forward raised: {_one_line(exc)}"
            times = []
    stages.total_s = time.perf_counter() - t0
    s = spread(times)
    return EvalResult(status=status, correct=status is Status.OK, runtime_ms=s.median_ms if s else None,
                      device=device, backend=cfg.backend or "", timings=[round(t, 6) for t in times],
                      runtime_spread=s, stages=stages,
                      diagnostics=Diagnostics(mismatch=mismatch, message=message)).to_dict()


def _check(model: Any, reference: Any, instance: Any, cfg: EvalConfig) -> Mismatch | None:
    """The first mismatch of the candidate's output against the reference's over the correctness
    sets (each drawn again for the candidate: a reference that changes its inputs leaves them as
    drawn), or None. The first call compiles (Triton's JIT, torch.compile's Inductor: seconds of
    CPU) and then runs on the device, and so holds the device shared, as the judge's warm-up does:
    outside the lock, its device work (Inductor benchmarks its kernels' configs on their first
    call) ran beside another worker's timing. Two whole tables measured with it outside moved
    a problem's torch.compile time by a median 3.4 % and up to 1.9x between the runs."""
    from htam_engine.evaluate.checks.compare import compare_outputs

    with _device(exclusive=False):
        for n in range(1, max(1, cfg.correctness_trials) + 1):
            expected = reference.model(*_draw(instance, n))
            got = model(*_draw(instance, n))
            mismatch = compare_outputs(got, expected, cfg.tolerances, f"get_inputs#{n}",
                                       _noise(reference, instance, n, expected, cfg.seed))
            if mismatch is not None:
                return mismatch
    return None


def _noise(reference: Any, instance: Any, n: int, expected: Any, seed: int) -> Any:
    """The judge's noise floor for set n (compare.compare_outputs): ||ref32 - ref64|| per output
    leaf, from a float64 run of the reference made only if the whole-output bound fails. Without
    it, an output at rounding-noise level (a mean of group-normalised values) is always wrong."""
    from htam_engine.evaluate.checks.compare import flatten, noise_norm

    leaves: dict[str, tuple[Any, Any]] = {}  # path -> (float32 reference, float64 reference), made once

    def noise(path: str) -> float | None:
        if not leaves:
            exact = reference.exact(_draw(instance, n), seed)
            exact_leaves = {leaf.path: leaf.value for leaf in flatten(exact)} if exact is not None else {}
            leaves.update({leaf.path: (leaf.value, exact_leaves.get(leaf.path)) for leaf in flatten(expected)})
        ref, e = leaves.get(path, (None, None))
        return noise_norm(ref, e) if ref is not None and e is not None else None

    return noise


def _release_device() -> None:
    import gc

    gc.collect()
    if _state["device"].startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


# ---------------------------------------------------------------------- the parent's side
class DirectPool:
    """`await evaluate(problem, code, config)` like a WorkerPool's, measured directly (see above)."""

    name = NAME

    def __init__(self, size: int, device: str, cpu_threads: int | None = 1, total_memory: int | None = None,
                 compile_baseline: bool = False):
        """total_memory: the device memory to budget, in place of what `device` reports (so that the
        GPU's admission runs on the CPU, for tests; as devicelock.DeviceLock's). compile_baseline:
        also time torch.compile once per problem, where the config asks for it (speedup_compile)."""
        self.size = max(1, size)
        self.device = device
        self.cpu_threads = cpu_threads
        self.total_memory = total_memory
        self.compile_baseline = compile_baseline
        self._ctx = multiprocessing.get_context("spawn")
        self._executor: ProcessPoolExecutor | None = None
        self._generation = 0
        self._baselines: dict[str, asyncio.Future] = {}  # one per problem, settings and subject
        self._start()

    def _budget(self) -> DeviceBudget | None:
        from htam_engine.evaluate.devicelock import device_memory, usable_memory

        total = self.total_memory if self.total_memory is not None else device_memory(self.device)
        if total is None:
            return None
        return DeviceBudget(self._ctx, max(NEED_ALLOWANCE_BYTES, usable_memory(total) - self.size * WORKER_RESERVE_BYTES))

    def _start(self) -> None:
        self._generation += 1
        self._executor = ProcessPoolExecutor(self.size, mp_context=self._ctx, initializer=_init_worker,
                                             initargs=(SharedExclusive(self._ctx), self._budget(), self.device,
                                                       self.cpu_threads))

    def _restart(self, generation: int) -> None:
        """Fresh workers, once per broken generation (the first caller to see it breaks it)."""
        if generation != self._generation or self._executor is None:
            return
        _stop(self._executor)
        self._start()

    async def _run(self, job: Job) -> EvalResult:
        loop = asyncio.get_running_loop()
        for _attempt in range(RETRIES + 1):
            generation = self._generation
            assert self._executor is not None
            try:
                reply = await asyncio.wait_for(loop.run_in_executor(self._executor, _measure, job),
                                               BACKSTOP_FACTOR * job.config.timeout_s + DEVICE_WAIT_S)
                return EvalResult.from_dict(reply)
            except BrokenProcessPool:
                self._restart(generation)
            except asyncio.TimeoutError:
                # its worker is stuck where its alarm cannot reach: every worker goes (the others' jobs are retried)
                self._restart(generation)
                return EvalResult.failure(Status.TIMEOUT, "the measuring process stopped answering",
                                          device=self.device, backend=job.config.backend or "")
            except Exception as exc:  # noqa: BLE001 - the worker failed to answer (e.g. a reply it could not pickle)
                return EvalResult.failure(Status.HARNESS_ERROR, f"the measuring process failed: {_one_line(exc)}",
                                          device=self.device, backend=job.config.backend or "")
        return EvalResult.failure(Status.RUNTIME_ERROR, f"the measuring process died {RETRIES + 1} times on this "
                                  "candidate", device=self.device, backend=job.config.backend or "")

    async def _baseline(self, problem: Any, config: EvalConfig, subject: Subject) -> EvalResult:
        from htam_engine.problems.loader import problem_key

        key = f"{problem_key(problem, self.device, None)}|{config.warmup}|{config.trials}|{config.seed}|{subject.value}"
        fut = self._baselines.get(key)
        if fut is None:
            # its own limit, not the first asking candidate's: torch.compile of a large model takes minutes
            from htam_engine.evaluate.rounds import BASELINE_PREP_S

            job = Job(problem, None, replace(config, timeout_s=max(config.timeout_s, BASELINE_PREP_S)), subject)
            fut = self._baselines[key] = asyncio.ensure_future(self._run(job))
        return await asyncio.shield(fut)

    async def evaluate(self, problem: Any, code: str, config: EvalConfig | None = None,
                       on_progress: Any = None) -> EvalResult:
        config = replace(config or EvalConfig(), device=self.device)
        subjects = [Subject.EAGER]
        if self.compile_baseline and config.time_compile_baseline:
            subjects.append(Subject.COMPILED)
        eager, *compiled = await asyncio.gather(*(self._baseline(problem, config, s) for s in subjects))
        if not eager.ok or not eager.runtime_ms:
            return EvalResult.failure(Status.HARNESS_ERROR, f"the reference did not run: "
                                      f"{eager.diagnostics.message}", device=self.device, backend=config.backend or "")
        result = await self._run(Job(problem, code, config))
        result.ref_runtime_ms, result.ref_spread = eager.runtime_ms, eager.runtime_spread
        if result.ok and result.runtime_ms:
            result.speedup_eager = eager.runtime_ms / result.runtime_ms
        # a torch.compile that failed or came out wrong leaves no figure, as in the judge's table
        if compiled and compiled[0].ok and compiled[0].runtime_ms:
            result.compile_ref_runtime_ms, result.compile_ref_spread = compiled[0].runtime_ms, compiled[0].runtime_spread
            if result.ok and result.runtime_ms:
                result.speedup_compile = compiled[0].runtime_ms / result.runtime_ms
        return result

    async def close(self) -> None:
        for fut in self._baselines.values():
            fut.cancel()
        if self._executor is not None:
            _stop(self._executor)
            self._executor = None


def _stop(executor: ProcessPoolExecutor) -> None:
    """The executor's workers killed (one may be stuck in a kernel), then the executor shut down."""
    for proc in list(getattr(executor, "_processes", {}).values()):
        with contextlib.suppress(Exception):
            proc.kill()
    executor.shutdown(wait=False, cancel_futures=True)
