"""The device lock in a judge: on a GPU a slot covers everything after compile, checks and the
baselines' warm-up calls hold the lock shared (a few judges at once, none while one times), while
building the reference sandbox and torch.compile's compile take none (CPU work, like a
candidate's build); on the CPU checks take no lock. Timing holds it exclusively on both.

A judge runs in this process on the small problem with the honest Triton candidate
(TRITON_INTERPRET=1); the stage messages record whether the lock was held.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid

import pytest

from harness_core_support import TRITON_CHAIN, fast_config
from htam_engine.evaluate import devicelock
from htam_engine.evaluate.backend import resolve_backend
from htam_engine.evaluate.cache import BUILD, cache_dir, candidate_key
from htam_engine.evaluate.devicelock import DeviceLock
from htam_engine.evaluate.result import Status
from htam_engine.evaluate.stages import Stage
from htam_engine.record_lock import EXCLUSIVE, SHARED, UNLOCK, record_lock


def _held(name: str) -> bool:
    """Whether another holder has the lock (a record lock of another open file conflicts, even in one process)."""
    return _mode(name) != "free"


@pytest.fixture(scope="module")
def judge():
    from htam_engine.evaluate.judge import Judge
    from htam_engine.evaluate.process import worker_env

    j = Judge("cpu", lambda msg: None, env=worker_env("cpu"))
    yield j
    j.close()


@pytest.fixture
def flag() -> str:
    """The name of a mark the stand-in candidates below leave for a later sandbox of theirs to see, in
    their own build folder (flag_at), the one folder of the cache a sandbox may write once its candidate
    is known (landlock.py; the test's own folder is not). Unique, so each test's candidate is a new source."""
    return f"test-flag-{uuid.uuid4().hex}"


def flag_at(flag: str) -> str:
    """The mark's path, as the stand-in's code finds it: its build folder is named by its key, its module by the same."""
    return f'_os.path.join({str(cache_dir() / BUILD)!r}, __name__.removeprefix("htam_candidate_"), {flag!r})'


def oom_once(flag: str) -> str:
    """The honest candidate, except that its first forward in the first sandbox to run it fails as
    a check beside other workers' memory would (a stand-in: there is no GPU here)."""
    return TRITON_CHAIN + f'''

import os as _os

_Fused = ModelNew
_FLAG = {flag_at(flag)}


class ModelNew(_Fused):
    def forward(self, *args):
        if not _os.path.exists(_FLAG):
            open(_FLAG, "w").close()
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (stand-in)")
        return super().forward(*args)
'''


def _stages(judge, small_problem, monkeypatch, slots: int, code: str = TRITON_CHAIN,
            status: Status = Status.OK, total_memory: int | None = None,
            messages: list[dict] | None = None) -> list[tuple[str, bool]]:
    """The stages the judge announced, each with whether the lock was held; `messages`: every
    other message it sent, appended there."""
    lock = f"time-test-{uuid.uuid4().hex[:8]}"
    # The policy a CUDA device gets, applied to the CPU (no GPU here): the lock mechanics are the same.
    monkeypatch.setattr(devicelock, "check_slots", lambda device, total_memory=None: slots)
    seen: list[tuple[str, bool]] = []

    def send(msg: dict) -> None:
        if msg.get("t") == "stage":
            seen.append((msg["stage"], _held(lock)))
        elif messages is not None:
            messages.append(msg)

    monkeypatch.setattr(judge, "send", send)
    monkeypatch.setattr(judge, "lock", DeviceLock("cpu", lock, lambda stage: judge.stage(Stage(stage)),
                                                  total_memory=total_memory))

    result, healthy = judge.evaluate(small_problem, code, fast_config(trials=3), resolve_backend(code, None, "cpu"),
                                     candidate_key(code, "triton", "cpu", "test"), 8000.0)
    assert result.status is status, result.diagnostics.message
    assert healthy  # a judge never ran the candidate: whatever it did, the judge goes on
    assert not _held(lock) and not any(_held(f"{lock}-slot{i}") for i in range(slots))
    for path in (cache_dir() / "locks").glob(f"{lock}*.lock"):
        os.unlink(path)
    return seen


GPU_ORDER = [("compile", False), ("wait_lock", False), ("check", True), ("baseline", False), ("time", False),
             ("check", True), ("baseline", False)]


@pytest.mark.parametrize("slots,expected", [
    # a GPU: wait for a slot, check holding the lock shared, prepare the baselines, then the timed
    # rounds, the work check shared again, the baselines alone once more (the candidate's sandbox
    # gone); the timed stages take the lock run by run (test_a_gpu_judge_has_the_device_alone_
    # for each timed run_and_shares_it_between_runs), and nobody else waits here, so no wait_lock
    (1, GPU_ORDER),
    (3, GPU_ORDER),
    # the CPU: checks run unlocked, timing alone for its whole stage
    (0, [("compile", False), ("check", False), ("baseline", False), ("time", True), ("check", False),
         ("baseline", True)]),
])
def test_lock_order_of_stages(judge, small_problem, monkeypatch, slots, expected):
    assert _stages(judge, small_problem, monkeypatch, slots) == expected


def test_baseline_warm_ups_hold_the_lock_shared_on_a_gpu(judge, small_problem, monkeypatch):
    """The reference sandbox is built and torch.compile compiles unlocked, but the warm-up calls
    run on the device: they hold the check lock, so no other judge is timing meanwhile."""
    from htam_engine.evaluate import judge as judge_mod

    real, held = judge_mod.Evaluation._warm_baseline, []

    def recording(self, bs, model_id):
        held.append((model_id, _held(self.judge.lock.name)))
        return real(self, bs, model_id)

    monkeypatch.setattr(judge_mod.Evaluation, "_warm_baseline", recording)
    _stages(judge, small_problem, monkeypatch, 2)
    assert held == [("eager", True)]


def test_check_out_of_memory_beside_other_checkers_is_checked_again_alone(judge, small_problem, monkeypatch,
                                                                          flag):
    stages = _stages(judge, small_problem, monkeypatch, 2, oom_once(flag))
    assert stages[:5] == [("compile", False), ("wait_lock", False), ("check", True), ("compile", False),
                          ("check", True)]
    assert stages[5:] == GPU_ORDER[3:]


def oom_on_unseen_shape_once(flag: str) -> str:
    """The honest candidate, except that the first time it meets shapes other than its first
    call's (the unseen-shape set) it fails as the H200's allocator did beside other evaluations
    (its out-of-memory report failing inside NVML; a stand-in: there is no GPU here)."""
    return TRITON_CHAIN + f'''

import os as _os

_Fused = ModelNew
_FIRST = []
_FLAG = {flag_at(flag)}


class ModelNew(_Fused):
    def forward(self, *args):
        shapes = [tuple(a.shape) for a in args if hasattr(a, "shape")]
        _FIRST[:] = _FIRST or [shapes]
        if shapes != _FIRST[0] and not _os.path.exists(_FLAG):
            open(_FLAG, "w").close()
            raise RuntimeError('NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at '
                               '"/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135, please report a bug to PyTorch.')
        return super().forward(*args)
'''


def test_an_out_of_memory_on_the_unseen_shape_is_checked_again_alone_not_blamed_on_the_shapes(
        judge, small_problem, monkeypatch, flag):
    """Seen on the H200: 26_GELU and 36_RMSNorm came back 'fails on input shapes it was not shown'
    when their sandbox's allocator ran out beside another evaluation on the unseen-shape set."""
    code = oom_on_unseen_shape_once(flag)
    stages = _stages(judge, small_problem, monkeypatch, 2, code)
    assert (cache_dir() / BUILD / candidate_key(code, "triton", "cpu", "test") / flag).exists()  # it did fail once,
    # and was checked again alone to an ok
    assert stages[:5] == [("compile", False), ("wait_lock", False), ("check", True), ("compile", False),
                          ("check", True)]


def test_check_out_of_memory_with_the_device_alone_is_a_runtime_error(judge, small_problem, monkeypatch, flag):
    stages = _stages(judge, small_problem, monkeypatch, 1, oom_once(flag), Status.RUNTIME_ERROR)
    assert [s for s, _ in stages].count("check") == 1


def test_check_out_of_memory_holding_every_unit_is_a_runtime_error(judge, small_problem, monkeypatch, flag):
    """Its need was more than the device (1 GiB here): it had every unit, so nothing beside it
    ran it out and it is not checked again."""
    stages = _stages(judge, small_problem, monkeypatch, 2, oom_once(flag), Status.RUNTIME_ERROR,
                     total_memory=1 << 30)
    assert [s for s, _ in stages].count("check") == 1


def test_gpu_devices_get_units_of_memory(monkeypatch):
    monkeypatch.delenv(devicelock.SLOTS_ENV, raising=False)
    assert devicelock.check_slots("cpu") == 0
    monkeypatch.setenv(devicelock.SLOTS_ENV, "2")
    assert devicelock.check_slots("cuda") == 2 and devicelock.check_slots("cuda:1") == 2
    monkeypatch.delenv(devicelock.SLOTS_ENV)
    import torch

    # units of 4 GiB of what the judges' own memory leaves (4 GiB a judge, at most half the device): a
    # judge not told how many share its device counts 16 (an H200's pool); H200 (as it reports itself),
    # H100, A100-40, L4, capped at 32. Told (a pool of 4), an H100 lends out 16 units, not 10
    monkeypatch.delenv(devicelock.JUDGES_ENV, raising=False)
    for judges, expected in [(None, [(139.8, 18), (80, 10), (40, 5), (24, 3), (512, 32)]),
                             ("4", [(139.8, 30), (80, 16), (40, 6), (24, 3)]),
                             ("1", [(80, 19), (24, 5)])]:
        if judges is not None:
            monkeypatch.setenv(devicelock.JUDGES_ENV, judges)
        for gib, slots in expected:
            props = type("Props", (), {"total_memory": int(gib * (1 << 30))})()
            monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device, p=props: p)
            assert devicelock.check_slots("cuda") == slots, (judges, gib)


def test_a_pool_tells_each_judge_how_many_judges_share_its_device(monkeypatch):
    """The judges' contexts are what a device's memory holds besides evaluations: a pool of 3 on one
    device starts each judge told 3 (devicelock.JUDGES_ENV); an evaluator on its own tells nothing."""
    from htam_engine.evaluate import pool as pool_module
    from htam_engine.evaluate.evaluator import Evaluator
    from htam_engine.evaluate.process import WorkerProcess

    assert [e.judges_on_device for e in pool_module.WorkerPool(3, "cpu")._slots] == [3, 3, 3]
    monkeypatch.setattr(pool_module, "visible_gpus", lambda: 2)
    assert [e.judges_on_device for e in pool_module.WorkerPool(3, "cuda")._slots] == [2, 1, 2]
    assert Evaluator("cpu").judges_on_device is None
    seen: dict[str, str] = {}

    def popen(command, **kwargs):  # the judge's environment, then no process
        seen.update(kwargs["env"])
        raise OSError("not started here")

    monkeypatch.setattr("subprocess.Popen", popen)
    for told, expected in ((3, "3"), (None, None)):
        seen.clear()
        with pytest.raises(Exception, match="not started here"):
            WorkerProcess("cpu", told).start()
        assert seen.get(devicelock.JUDGES_ENV) == expected


@pytest.mark.parametrize("off,counted", [
    # a reference sandbox whose compiled code was swapped for something wrong
    (lambda out: out * 2 + 1, False),
    # torch.compile's own rounding, as its batch norm showed on the H200: 5e-4 relative, past
    # KernelBench's 1e-4 for a candidate, within what a baseline is allowed
    (lambda out: out * (1 + 5e-4), True),
])
def test_a_baseline_whose_output_is_not_the_references_is_not_counted(judge, small_problem, monkeypatch, off,
                                                                      counted):
    # The judge's reference is made to disagree with the baselines for the rounds timed after
    # the candidate.
    from htam_engine.evaluate import judge as judge_mod

    alone = judge_mod.Evaluation._time_baselines_alone

    def disagreeing(self, bs):
        # On the instance, and taken off again: the judge (module-wide) keeps this reference, and a
        # monkeypatch of the instance would leave the method it found set on it.
        real = self.reference.outputs
        self.reference.outputs = lambda *a, **k: off(real(*a, **k))
        try:
            return alone(self, bs)
        finally:
            del self.reference.outputs

    monkeypatch.setattr(judge_mod.Evaluation, "_time_baselines_alone", disagreeing)

    result, _ = judge.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=3), "triton",
                               candidate_key(TRITON_CHAIN, "triton", "cpu", "test"), 8000.0)
    assert result.status is Status.OK, result.diagnostics.message
    wrong = [f for f in result.integrity if f.rule == "baseline_wrong"]
    if counted:
        assert not wrong, wrong
        return
    assert wrong and wrong[0].severity == "warn" and "not counted" in wrong[0].message
    assert result.ref_runtime_ms and result.ref_spread.n == 1  # the run beside the candidate still counts


def test_an_evaluation_takes_units_by_the_size_of_its_inputs(judge, small_problem, monkeypatch):
    """The judge asks for the need its loaded problem's input layouts give, before it allocates."""
    asked: list = []
    real = DeviceLock.holding_state

    def recording(self, need_bytes=None):
        asked.append(need_bytes)
        return real(self, need_bytes)

    monkeypatch.setattr(DeviceLock, "holding_state", recording)
    _stages(judge, small_problem, monkeypatch, 3)
    loaded = judge.loaded(small_problem, fast_config(trials=3))[0]  # the one the evaluation used
    assert loaded.input_layouts is not None
    expected = devicelock.evaluation_need(loaded.input_layouts, loaded.unseen_input_layouts, loaded.unseen is not None)
    assert asked == [expected] and expected > devicelock.NEED_ALLOWANCE_GIB << 30


def _mode(name: str) -> str:
    """How another holder has the lock: "alone" (exclusively), "shared", or "free"."""
    path = cache_dir() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        for kind, taken in ((EXCLUSIVE, "free"), (SHARED, "shared")):
            if record_lock(fh.fileno(), kind, wait=False):
                record_lock(fh.fileno(), UNLOCK)
                return taken
    return "alone"


def _lock_modes(judge, small_problem, monkeypatch) -> list[tuple[str, str, str]]:
    """(kind, what, how another holder sees the device lock) at every call and reference output."""
    from htam_engine.evaluate.channel import Channel
    from htam_engine.evaluate.reference import ReferenceModel

    seen: list[tuple[str, str, str]] = []
    real_run, real_outputs = Channel.call_run, ReferenceModel.outputs

    def call_run(self, staged, model_id, ref_outs, seeds, stage, *args, **kwargs):
        seen.append(("run", f"{model_id} {stage.value} {kwargs.get('kernels') or ''}".strip(), _mode(judge.lock.name)))
        return real_run(self, staged, model_id, ref_outs, seeds, stage, *args, **kwargs)

    def outputs(self, values, seed, label):
        seen.append(("reference", label, _mode(judge.lock.name)))
        return real_outputs(self, values, seed, label)

    monkeypatch.setattr(Channel, "call_run", call_run)
    monkeypatch.setattr(ReferenceModel, "outputs", outputs)
    _stages(judge, small_problem, monkeypatch, 2)
    return seen


def test_a_gpu_judge_has_the_device_alone_for_each_timed_run_and_shares_it_between_runs(judge, small_problem,
                                                                                         monkeypatch):
    """Where the timed runs would hold the device long (rounds.STRETCH_ALONE_S), the exclusive hold
    is one timed run (the candidate's calls, then its baselines' on the same sets); the judge draws
    each run's sets and computes their reference outputs holding the device shared, so another
    judge's checks go on between this one's runs. The checks and the work check hold it shared."""
    from htam_engine.evaluate import rounds as rounds_module

    monkeypatch.setattr(rounds_module, "STRETCH_ALONE_S", 0.0)  # every stretch counts as long
    seen = _lock_modes(judge, small_problem, monkeypatch)
    timed = [(what, mode) for kind, what, mode in seen if kind == "run" and " time" in what]
    assert {w.split()[0] for w, _ in timed} >= {"main", "eager"} and \
        all(mode == "alone" for _, mode in timed), timed
    rounds = [(label, mode) for kind, label, mode in seen
              if kind == "reference" and ("timed trial" in label or "warm-up call" in label)]
    assert rounds and all(mode == "shared" for _, mode in rounds), rounds
    checks = [(what, mode) for kind, what, mode in seen if kind == "run" and " check" in what]
    assert any("skip" in w for w, _ in checks) and all(mode == "shared" for _, mode in checks), checks
    runs = [(what, mode) for kind, what, mode in seen if kind == "run"]
    first_timed = next(i for i, (what, _) in enumerate(runs) if " time" in what)
    alone = [(what, mode) for what, mode in runs[first_timed:] if " baseline" in what]  # not the warm-ups
    assert alone and all(mode == "alone" for _, mode in alone), alone


def test_a_short_stretch_of_timed_runs_keeps_the_device_alone_between_its_runs(judge, small_problem, monkeypatch):
    """Where the timed runs are short (a small problem's), the device is taken alone once for them
    all: the reference outputs between runs are computed holding it too, not given back to other
    judges' checks between runs (each take waits for every checker's call in flight). The checks
    and the work check still hold it shared."""
    seen = _lock_modes(judge, small_problem, monkeypatch)
    runs = [(what, mode) for kind, what, mode in seen if kind == "run"]
    first_timed = next(i for i, (what, _) in enumerate(runs) if " time" in what)
    timed = [(what, mode) for what, mode in runs[first_timed:] if " time" in what or " baseline" in what]
    assert timed and all(mode == "alone" for _, mode in timed), timed
    rounds = [(label, mode) for kind, label, mode in seen if kind == "reference" and "timed trial" in label]
    assert rounds and all(mode == "alone" for _, mode in rounds), rounds
    checks = [(what, mode) for kind, what, mode in seen if kind == "run" and " check" in what]
    assert checks and all(mode == "shared" for _, mode in checks), checks


def test_each_baselines_outputs_are_checked_before_the_next_baseline_writes_over_them(judge, small_problem,
                                                                                       monkeypatch):
    """Eager and torch.compile write their outputs into the same buffers of the reference sandbox:
    a timed run checks each one's outputs before the other's calls, or eager would be judged on
    torch.compile's outputs (and a wrong torch.compile counted against eager)."""
    from htam_engine.evaluate import judge as judge_mod
    from htam_engine.evaluate.channel import Channel

    events: list[tuple[str, str]] = []
    real_run, real_right = Channel.call_run, judge_mod.Evaluation._baseline_right

    def call_run(self, staged, model_id, ref_outs, seeds, stage, *args, **kwargs):
        if model_id in ("eager", "compiled") and stage is Stage.TIME:  # the timed runs beside the candidate
            events.append(("run", model_id))
        return real_run(self, staged, model_id, ref_outs, seeds, stage, *args, **kwargs)

    def baseline_right(self, res, model_id, *args):
        if self.judge.working_stage is Stage.TIME:
            events.append(("check", model_id))
        return real_right(self, res, model_id, *args)

    monkeypatch.setattr(Channel, "call_run", call_run)
    monkeypatch.setattr(judge_mod.Evaluation, "_baseline_right", baseline_right)
    result, _ = judge.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=3, time_compile_baseline=True),
                               "triton", candidate_key(TRITON_CHAIN, "triton", "cpu", "test"), 8000.0)
    assert result.status is Status.OK and result.compile_ref_runtime_ms, result.diagnostics.message
    assert ("check", "compiled") in events
    last_run, unchecked = None, False
    for kind, model in events:
        if kind == "run":
            assert not unchecked, events  # the run before's outputs were not checked before these calls
            last_run, unchecked = model, True
        else:
            assert model == last_run, events
            unchecked = False


def test_an_evaluation_run_again_alone_says_so_and_counts_both_runs(judge, small_problem, monkeypatch):
    """A harness failure beside other evaluations (here the reference sandbox failing once, a
    stand-in) runs the evaluation again with the device alone: the verdict is the second run's,
    a warning names the first run's failure (it held every other evaluation up), and the result's
    device figures count both runs."""
    from htam_engine.evaluate import judge as judge_mod
    from htam_engine.evaluate.checks.sequence import HarnessFault

    real, failed = judge_mod.Evaluation._prepare_baselines, []

    def once(self, loaded, init):
        if not failed:
            failed.append(True)
            raise HarnessFault("the reference sandbox failed: stand-in for a death beside others")
        return real(self, loaded, init)

    monkeypatch.setattr(judge_mod.Evaluation, "_prepare_baselines", once)
    monkeypatch.setattr(devicelock, "check_slots", lambda device, total_memory=None: 2)
    monkeypatch.setattr(judge, "lock", DeviceLock("cpu", f"time-test-{uuid.uuid4().hex[:8]}"))
    result, healthy = judge.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=3), "triton",
                                     candidate_key(TRITON_CHAIN, "triton", "cpu", "test"), 8000.0)
    assert result.status is Status.OK and healthy, result.diagnostics.message
    said = [f for f in result.integrity if f.rule == "ran_alone"]
    assert said and said[0].severity == "warn" and "stand-in for a death" in said[0].message
    assert result.stages.device_alone_s >= result.stages.time_s > 0


@pytest.mark.parametrize("fires", ["once", "always"])
def test_a_conviction_by_the_judges_clock_stands_on_two_timings(judge, small_problem, monkeypatch, fires):
    """The clock rule firing once (a stand-in for an honest candidate's wake-ups on a loaded CPU)
    times the candidate again: the verdict is the second timing's. Firing on both convicts."""
    from htam_engine.evaluate import rounds as rounds_module

    real, calls = rounds_module.clock_check, []

    def clock_check(*args, **kwargs):
        figures, message = real(*args, **kwargs)
        calls.append(True)
        if fires == "always" or len(calls) == 1:
            message = "the judge's clock saw 27 ms per trial beyond the reported time (stand-in)"
        return figures, message

    monkeypatch.setattr(rounds_module, "clock_check", clock_check)
    status = Status.OK if fires == "once" else Status.REJECTED
    messages: list[dict] = []
    _stages(judge, small_problem, monkeypatch, 0, status=status, messages=messages)
    assert len(calls) == 2
    # the engine's live trial times start over with the second timing
    assert sum(1 for m in messages if m.get("t") == "trials" and m.get("from_start")) == 2


def test_the_candidate_is_stopped_while_its_judge_waits_for_the_timing_lock(judge, small_problem, monkeypatch):
    """Red-team pass 29: a candidate's processes spun while their judge waited for the timing lock,
    under another judge's timed runs (an honest candidate there timed 45 % slower). While another
    judge times, every process of the waiting judge's candidate is stopped; then it goes on to ok."""
    import psutil

    lock = f"time-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(devicelock, "check_slots", lambda device, total_memory=None: 0)  # the CPU's policy
    monkeypatch.setattr(judge, "lock", DeviceLock("cpu", lock, lambda stage: judge.stage(Stage(stage))))
    path = cache_dir() / "locks" / f"{lock}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    other = open(path, "a+")  # another judge, timing
    record_lock(other.fileno(), EXCLUSIVE)
    stopped: list[int] = []

    def look_then_let_go() -> None:
        time.sleep(0.5)
        zygote = psutil.Process(judge.zygote.proc.pid)
        for p in zygote.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if p.status() == psutil.STATUS_STOPPED:
                    stopped.append(p.pid)
        other.close()

    def send(msg: dict) -> None:
        if msg.get("t") == "stage" and msg["stage"] == "wait_lock":
            threading.Thread(target=look_then_let_go, daemon=True).start()

    monkeypatch.setattr(judge, "send", send)
    try:
        result, healthy = judge.evaluate(small_problem, TRITON_CHAIN, fast_config(trials=3), "triton",
                                         candidate_key(TRITON_CHAIN, "triton", "cpu", "test"), 8000.0)
    finally:
        other.close()
        path.unlink(missing_ok=True)
    assert result.status is Status.OK and healthy, result.diagnostics.message
    assert stopped, "no process of the candidate's was stopped while its judge waited"
