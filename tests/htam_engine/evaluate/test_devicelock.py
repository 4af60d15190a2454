"""The device lock's protocol, with threads standing in for workers (fcntl locks conflict
between open files, also within one process): checkers overlap, a timer has the device to
itself and is not starved by checkers arriving after it, slots bound live state."""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time

import pytest

from htam_engine.evaluate import devicelock
from htam_engine.evaluate.cache import release_file_lock, try_file_lock
from htam_engine.evaluate.devicelock import DeviceLock


@pytest.fixture()
def gpu_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))

    def make(slots: int) -> DeviceLock:
        monkeypatch.setenv(devicelock.SLOTS_ENV, str(slots))
        return DeviceLock("cuda", "time-gpu0")

    return make


def _run(fn) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def _wait(event: threading.Event, what: str) -> None:
    assert event.wait(10), f"timed out waiting for {what}"


def test_checkers_overlap(gpu_lock):
    lock = gpu_lock(2)
    inside = threading.Barrier(2, timeout=10)

    def checker() -> None:
        with lock.holding_state(), lock.checking():
            inside.wait()  # both must be inside at once, or the barrier times out

    threads = [_run(checker) for _ in range(2)]
    for t in threads:
        t.join(10)
    assert not inside.broken


def test_a_waiting_timer_goes_before_later_checkers_and_runs_alone(gpu_lock):
    lock = gpu_lock(4)
    order: list[str] = []
    first_in, release_first, timer_waiting = threading.Event(), threading.Event(), threading.Event()
    active = {"checkers": 0, "timers": 0}
    overlap: list[str] = []
    guard = threading.Lock()

    def enter(kind: str) -> None:
        with guard:
            active[kind] += 1
            if active["timers"] and active["checkers"]:
                overlap.append(kind)
            order.append(kind)

    def leave(kind: str) -> None:
        with guard:
            active[kind] -= 1

    def first_checker() -> None:
        with lock.checking():
            enter("checkers")
            first_in.set()
            _wait(release_first, "release")
            leave("checkers")

    def timer() -> None:
        _wait(first_in, "first checker")
        timer_waiting.set()
        with lock.timing():
            enter("timers")
            time.sleep(0.2)
            leave("timers")

    def late_checker() -> None:
        _wait(timer_waiting, "timer")
        time.sleep(0.2)  # the timer is now blocked on the first checker, holding the gate
        with lock.checking():
            enter("checkers")
            leave("checkers")

    threads = [_run(first_checker), _run(timer), _run(late_checker)]
    _wait(timer_waiting, "timer")
    time.sleep(0.5)
    assert order == ["checkers"]  # the timer waits for the checker inside; the late one waits for the timer
    release_first.set()
    for t in threads:
        t.join(10)
    assert order == ["checkers", "timers", "checkers"]
    assert overlap == []


def test_slots_bound_how_many_hold_state(gpu_lock):
    lock = gpu_lock(1)
    first_in, release = threading.Event(), threading.Event()
    second_in = threading.Event()

    def first() -> None:
        with lock.holding_state():
            first_in.set()
            _wait(release, "release")

    def second() -> None:
        _wait(first_in, "first")
        with lock.holding_state():
            second_in.set()

    threads = [_run(first), _run(second)]
    _wait(first_in, "first")
    assert not second_in.wait(0.5)
    release.set()
    _wait(second_in, "second")
    for t in threads:
        t.join(10)


def test_the_cpu_has_no_slots_and_checks_take_no_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    lock = DeviceLock("cpu", "time-cpu")
    assert lock.slots == 0
    with lock.timing():
        # a check on the CPU does not wait for a timing in progress
        done = threading.Event()

        def checker() -> None:
            with lock.holding_state(), lock.checking():
                done.set()

        _run(checker)
        _wait(done, "checker")


def test_an_evaluation_alone_waits_for_every_slot_and_keeps_the_device_to_itself(gpu_lock):
    """What an evaluation that ran out of memory beside others is re-run under: no other worker
    holds state on the device (every slot is taken, after the one a worker still holds is freed),
    nobody checks or times meanwhile, and the evaluation's own phases inside do not wait on it."""
    lock, other = gpu_lock(2), DeviceLock("cuda", "time-gpu0")
    holding, release, alone_in, checked = (threading.Event() for _ in range(4))

    def worker_with_state() -> None:
        with other.holding_state():
            holding.set()
            release.wait(10)

    def evaluation_alone() -> None:
        with lock.alone():
            alone_in.set()
            with lock.holding_state(), lock.checking(), lock.timing():  # no wait on itself
                time.sleep(0.2)

    _run(worker_with_state)
    _wait(holding, "the other worker's slot")
    _run(evaluation_alone)
    time.sleep(0.3)
    assert not alone_in.is_set(), "alone() went ahead while another worker held state on the device"
    release.set()
    _wait(alone_in, "alone() after the slot was freed")

    def later_checker() -> None:
        with other.holding_state(), other.checking():
            checked.set()

    _run(later_checker)
    time.sleep(0.05)
    assert not checked.is_set(), "a checker got in while an evaluation had the device alone"
    _wait(checked, "the checker after alone() ended")


# ---------------------------------------------------------------- memory units, across processes
#
# A DeviceLock given the memory of a GPU and how many units it is cut into applies the GPU's
# policy on the CPU. Workers are forked processes here: each takes its units on its own open
# files, and a killed one's locks go with it, as a judge's do.

GIB = 1 << 30
FORK = multiprocessing.get_context("fork")
NAME = "time-units"


def _units_lock(units: int = 4, total_gib: int = 64) -> DeviceLock:
    return DeviceLock("cpu", NAME, total_memory=total_gib * GIB, units=units, poll_s=0.01)


def _need(units: int) -> int:
    """The bytes an evaluation needs to take exactly `units` units of _units_lock()."""
    return int(units * _units_lock().unit_bytes)


def _holder(units: int, entered, release, log: str = "", tag: str = "") -> None:
    """A worker: hold an evaluation's units until told to let go (or its parent kills it)."""
    lock = _units_lock()
    if log:
        with open(log, "a") as fh:
            fh.write(f"{tag} asks {time.monotonic()}\n")
    with lock.holding_state(_need(units)):
        if log:
            with open(log, "a") as fh:
                fh.write(f"{tag} in {time.monotonic()}\n")
        entered.set()
        release.wait(30)
        if log:
            with open(log, "a") as fh:
                fh.write(f"{tag} out {time.monotonic()}\n")


def _start(units: int, log: str = "", tag: str = ""):
    entered, release = FORK.Event(), FORK.Event()
    p = FORK.Process(target=_holder, args=(units, entered, release, log, tag), daemon=True)
    p.start()
    return p, entered, release


def _free_units(count: int = 4) -> int:
    """How many of the units no one holds now (each taken and let go at once)."""
    free = 0
    for i in range(count):
        held = try_file_lock(f"{NAME}-slot{i}")
        if held is not None:
            release_file_lock(held)
            free += 1
    return free


@pytest.fixture()
def procs(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    started: list = []
    yield started
    for p in started:
        if p.is_alive():
            p.kill()
        p.join(10)


def _up(procs, *args):
    p, entered, release = _start(*args)
    procs.append(p)
    return p, entered, release


def test_units_an_evaluation_takes_follow_its_need(monkeypatch):
    monkeypatch.setenv(devicelock.JUDGES_ENV, "4")  # 16 GiB of the judges' own memory
    lock = _units_lock(units=4, total_gib=64)  # 48 GiB usable: 12 GiB units
    assert lock.unit_bytes == 12 * GIB
    assert lock.units_for(0) == 1 and lock.units_for(GIB) == 1 and lock.units_for(12 * GIB) == 1
    assert lock.units_for(12 * GIB + 1) == 2 and lock.units_for(36 * GIB) == 3
    assert lock.units_for(1000 * GIB) == 4  # more than the device: every unit (alone), not refused
    assert lock.units_for(None) == 2  # not known: half the device
    one = DeviceLock("cpu", NAME, total_memory=64 * GIB, units=1)  # gpu_check_slots = 1: one at a time
    assert one.units_for(GIB) == one.units_for(None) == 1


def test_an_evaluations_need_is_a_multiple_of_its_larger_input_set():
    import torch

    small = (((1024, 1024), (1024, 1), torch.float32),)  # 4 MiB
    big = (((1024, 1024), (1024, 1), torch.float32), ((2048, 1024), (1, 2048), torch.float16))  # 4 + 4 MiB
    allowance = devicelock.NEED_ALLOWANCE_GIB * GIB
    assert devicelock.layouts_bytes(big) == 8 << 20
    assert devicelock.layouts_bytes((((4, 0), (1, 1), torch.float32),)) == 0
    # a set this small: each sandbox also keeps a copy of it to warm up on
    assert devicelock.evaluation_need(small, None, False) == (devicelock.NEED_FACTOR * 2 + 2) * (4 << 20) + allowance
    assert devicelock.evaluation_need(small, big, True) == (devicelock.NEED_FACTOR * 2 + 2) * (8 << 20) + allowance
    assert devicelock.evaluation_need(big, small, True) == (devicelock.NEED_FACTOR * 2 + 2) * (8 << 20) + allowance
    at_most = (((1 << 18, 1024), (1024, 1), torch.float32),)  # 1 GiB: timing.WARM_COPY_MAX_BYTES, still copied
    assert devicelock.evaluation_need(at_most, None, False) == (devicelock.NEED_FACTOR * 2 + 2) * GIB + allowance
    past = (((1 << 18, 1025), (1025, 1), torch.float32),)  # past it: no copies
    assert devicelock.evaluation_need(past, None, False) == devicelock.NEED_FACTOR * 2 * devicelock.layouts_bytes(past) + allowance
    assert devicelock.evaluation_need(None, None, False) is None  # get_inputs could not run on meta
    assert devicelock.evaluation_need(small, None, True) is None  # nor its unseen-shape variant's


def test_gpu_check_slots_cuts_the_memory_into_that_many_units(monkeypatch):
    monkeypatch.setenv(devicelock.SLOTS_ENV, "1")
    lock = DeviceLock("cpu", NAME, total_memory=140 * GIB)
    assert lock.slots == 1 and lock.units_for(GIB) == 1
    monkeypatch.setenv(devicelock.SLOTS_ENV, "0")
    assert DeviceLock("cpu", NAME, total_memory=140 * GIB).slots == (140 - 64) // devicelock.UNIT_GIB  # 16 judges of 4 GiB


def test_two_small_evaluations_hold_units_at_once(procs):
    _, first_in, _ = _up(procs, 1)
    _, second_in, _ = _up(procs, 1)
    _wait(first_in, "the first small evaluation")
    _wait(second_in, "the second small evaluation beside the first")
    assert _free_units() == 2


def test_a_big_evaluation_waits_until_enough_units_are_free_then_takes_only_those(procs):
    _, a_in, a_release = _up(procs, 1)
    _, b_in, b_release = _up(procs, 1)
    _wait(a_in, "a")
    _wait(b_in, "b")
    _, big_in, big_release = _up(procs, 3)
    assert not big_in.wait(1.0), "3 units were taken while only 2 were free"
    a_release.set()
    _wait(big_in, "the big evaluation once 3 units were free")
    assert _free_units() == 0  # b's one and the big one's three
    big_release.set()
    b_release.set()
    for p in procs:
        p.join(10)
    assert _free_units() == 4


def _admitted_with_free_memory(free: list[int], need: int | None) -> tuple[threading.Thread, threading.Event]:
    """A thread taking one unit for an evaluation needing `need` bytes while the device has free[0]
    bytes free (a stand-in for the driver's figure, which the CPU has not)."""
    entered = threading.Event()
    lock = DeviceLock("cpu", NAME, total_memory=64 * GIB, units=4, poll_s=0.01, free_memory=lambda: free[0])

    def admitted() -> None:
        with lock.holding_state(need):
            entered.set()

    t = threading.Thread(target=admitted, daemon=True)
    t.start()
    return t, entered


def test_an_evaluation_waits_beside_others_until_the_device_has_the_memory_it_needs(procs):
    """Units count only what evaluations' sets need; the judges' contexts and what their sandboxes keep
    are an allowance. Where the device has less free than an evaluation needs, it does not start beside
    others (it would run out and be run again alone, holding every other up): it waits until memory
    is freed, or until nobody else holds units (then what fills the device is no evaluation's)."""
    _, a_in, a_release = _up(procs, 1)
    _wait(a_in, "another evaluation")
    free = [1 * GIB]
    t, entered = _admitted_with_free_memory(free, 2 * GIB)
    assert not entered.wait(0.5), "started beside another with 1 GiB free for a need of 2"
    free[0] = 3 * GIB  # the other's sandbox ended, say
    _wait(entered, "the evaluation once the memory was free")
    t.join(5)
    free[0] = 1 * GIB
    t, entered = _admitted_with_free_memory(free, 2 * GIB)
    assert not entered.wait(0.5)
    a_release.set()  # nobody else holds units now: waiting would free nothing
    _wait(entered, "the evaluation once it was alone with its units")
    t.join(5)
    t, entered = _admitted_with_free_memory([0], None)  # a need not known: the units decide
    _wait(entered, "an evaluation of unknown need")
    t.join(5)


def test_a_waiting_big_evaluation_is_not_starved_by_a_stream_of_small_ones(procs, tmp_path):
    """Small evaluations keep arriving, overlapping so that some unit is always held; the big one
    (every unit) still gets in within a bound: once it asked, no more small ones are admitted
    (but the one or two racing it for the admission lock)."""
    log, stop = str(tmp_path / "log"), FORK.Event()

    def stream(tag: str, delay: float) -> None:
        time.sleep(delay)
        lock = _units_lock()
        while not stop.is_set():
            with lock.holding_state(_need(1)):
                with open(log, "a") as fh:
                    fh.write(f"{tag} in {time.monotonic()}\n")
                time.sleep(0.3)

    for i in range(3):
        p = FORK.Process(target=stream, args=(f"small{i}", 0.1 * i), daemon=True)
        p.start()
        procs.append(p)
    time.sleep(1.0)  # the stream is flowing
    arrived = time.monotonic()
    _, big_in, big_release = _up(procs, 4, log, "big")
    _wait(big_in, "the big evaluation, with small ones arriving all along")
    waited = time.monotonic() - arrived
    assert waited < 5.0, f"the big evaluation waited {waited:.1f} s for small ones that came after it"
    time.sleep(0.5)
    big_release.set()
    time.sleep(0.5)
    stop.set()
    lines = [line.split() for line in open(log).read().splitlines()]
    asked = next(float(t) for tag, what, t in lines if tag == "big" and what == "asks")
    big_at = next(float(t) for tag, what, t in lines if tag == "big" and what == "in")
    late = [tag for tag, what, t in lines if tag != "big" and asked + 0.05 < float(t) < big_at]
    assert len(late) <= 2, f"small evaluations admitted while the big one waited: {late}"
    assert any(tag != "big" and float(t) > big_at for tag, what, t in lines), "the stream stopped"


def test_a_worker_killed_while_holding_units_or_waiting_for_them_frees_them(procs):
    holder, held_in, _ = _up(procs, 4)  # every unit
    _wait(held_in, "the holder")
    waiter, waiter_in, _ = _up(procs, 4)  # waits holding the admission lock
    time.sleep(0.5)
    small, small_in, small_release = _up(procs, 1)  # waits for admission
    assert not small_in.wait(0.5)
    holder.kill()
    _wait(waiter_in, "the waiter after the holder was killed")
    assert not small_in.wait(0.5)
    waiter.kill()
    _wait(small_in, "the small evaluation after the waiter was killed")
    small_release.set()
    small.join(10)
    assert _free_units() == 4

    # one killed while it waits for units (admission held, some units collected) lets go of them
    _, a_in, a_release = _up(procs, 1)
    _wait(a_in, "a")
    big, _, _ = _up(procs, 4)
    time.sleep(0.5)  # it holds admission and the 3 free units
    assert _free_units() == 0
    big.kill()
    big.join(10)
    _, c_in, _ = _up(procs, 3)
    _wait(c_in, "an evaluation after the waiting one was killed")
    a_release.set()


def _alone_worker(entered, release) -> None:
    lock = _units_lock()
    with lock.alone():
        entered.set()
        with lock.holding_state(_need(1)), lock.checking(), lock.timing():  # no wait on itself
            release.wait(30)


def _small_checker(entered) -> None:
    lock = _units_lock()
    with lock.holding_state(_need(1)), lock.checking():
        entered.set()


def test_alone_waits_for_every_unit_and_keeps_the_device_from_everyone(procs):
    _, a_in, a_release = _up(procs, 1)
    _wait(a_in, "a small evaluation")
    alone_in, alone_release, checked = FORK.Event(), FORK.Event(), FORK.Event()
    alone = FORK.Process(target=_alone_worker, args=(alone_in, alone_release), daemon=True)
    alone.start()
    procs.append(alone)
    assert not alone_in.wait(1.0), "alone() went ahead while another worker held units"
    a_release.set()
    _wait(alone_in, "alone() once the units were free")
    checker = FORK.Process(target=_small_checker, args=(checked,), daemon=True)
    checker.start()
    procs.append(checker)
    assert not checked.wait(1.0), "a small evaluation got in while one had the device alone"
    assert _free_units() == 0
    alone_release.set()
    _wait(checked, "the small evaluation after alone() ended")


def test_a_worker_holding_units_cannot_take_more(tmp_path, monkeypatch):
    """Taking units while holding some could deadlock two workers at admission: refused."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    lock = _units_lock()
    with lock.holding_state(_need(1)):
        with pytest.raises(RuntimeError, match="holds none"), lock.holding_state(_need(1)):
            pass
    with lock.holding_state(_need(1)):  # and it let go of them
        assert _free_units() == 3


def test_only_an_evaluation_that_left_units_to_others_may_blame_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    lock = _units_lock()
    assert lock.shared_with_others()  # it took none yet: others may have had the memory
    with lock.holding_state(_need(3)):
        pass
    assert lock.shared_with_others()
    with lock.holding_state(_need(100)):  # every unit: nobody else had state on the device
        pass
    assert not lock.shared_with_others()
    assert not DeviceLock("cpu", NAME, total_memory=64 * GIB, units=1).shared_with_others()


def test_a_checker_lets_a_waiting_timer_in_between_two_calls(gpu_lock, monkeypatch):
    """A timer that arrives during another judge's checks has its run between two of the checks'
    calls, not after all of them; the checker announces its wait and resumes its stage after."""
    monkeypatch.setenv(devicelock.SLOTS_ENV, "4")
    said: list[str] = []
    checker_lock = DeviceLock("cuda", "time-gpu0", announce=said.append, resume=lambda: said.append("resume"))
    timer_lock = gpu_lock(4)
    order: list[str] = []
    first_call_done, timer_waiting, timer_done = threading.Event(), threading.Event(), threading.Event()

    def checker() -> None:
        with checker_lock.checking():
            order.append("call 1")
            first_call_done.set()
            _wait(timer_waiting, "timer")
            time.sleep(0.3)  # the timer now holds the gate, waiting for this checker's shared hold
            checker_lock.let_timers_in()
            order.append("call 2")

    def timer() -> None:
        _wait(first_call_done, "first call")
        timer_waiting.set()
        with timer_lock.timed_run():
            order.append("timed run")
            time.sleep(0.2)
        timer_done.set()

    threads = [_run(checker), _run(timer)]
    for t in threads:
        t.join(10)
    assert order == ["call 1", "timed run", "call 2"]
    assert said == ["wait_lock", "resume"]


def test_a_checker_with_no_timer_waiting_keeps_the_device(gpu_lock):
    """let_timers_in with nobody at the gate lets go of nothing: a timer arriving right after still
    waits for the checker's hold to end."""
    lock = gpu_lock(4)
    said: list[str] = []
    lock.announce = said.append
    with lock.checking():
        held = lock._local.shared
        lock.let_timers_in()
        assert said == []
        assert lock._local.shared is held  # the same hold: not let go of and taken again
        assert try_file_lock("time-gpu0") is None  # still held shared: no exclusive hold possible
        shared = try_file_lock("time-gpu0", shared=True)
        assert shared is not None  # (held shared, not alone)
        release_file_lock(shared)
    held = try_file_lock("time-gpu0")
    assert held is not None
    release_file_lock(held)


def test_a_timer_holding_the_device_shared_is_refused_rather_than_waiting_for_itself(gpu_lock):
    lock = gpu_lock(2)
    with lock.checking(), pytest.raises(RuntimeError, match="does not hold it shared"):
        with lock.timed_run():
            pass


def test_the_lock_counts_what_each_worker_waited_and_held_alone(gpu_lock):
    """An evaluation's waits behind others and its time holding the device alone are what the
    result reports (stages.lock_wait_s, device_alone_s): a pool's queue and its serialized part."""
    holder, waiter = gpu_lock(2), gpu_lock(2)
    inside = threading.Event()

    def hold() -> None:
        with holder.timing():
            inside.set()
            time.sleep(0.4)

    t = _run(hold)
    _wait(inside, "the holder")
    with waiter.checking():
        pass
    t.join(10)
    assert holder.alone_s >= 0.35 and holder.waited_s < 0.1
    assert 0.2 <= waiter.waited_s and waiter.alone_s == 0.0


def test_a_short_stretch_of_runs_takes_the_device_alone_once(gpu_lock):
    """Inside runs_alone(short=True) the runs and the judge's work between them hold nothing more:
    a checker arriving meanwhile waits for the whole stretch, not for one run. A long stretch takes
    nothing itself (each run takes the device then)."""
    lock, other = gpu_lock(2), gpu_lock(2)
    inside, checked = threading.Event(), threading.Event()

    def checker() -> None:
        _wait(inside, "the stretch")
        with other.checking():
            checked.set()

    t = _run(checker)
    with lock.runs_alone(short=True):
        inside.set()
        for _ in range(3):
            with lock.timed_run():
                pass
            with lock.checking():  # between runs: would let the checker in, were the stretch not alone
                time.sleep(0.1)
        assert not checked.is_set()
    t.join(10)
    assert checked.is_set() and lock.alone_s >= 0.3
    with lock.runs_alone(short=False):
        assert not lock.held_alone


@pytest.mark.parametrize("phase", ["check", "state", "admission"])
def test_every_wait_and_only_a_wait_is_framed_by_waiting(gpu_lock, phase):
    """DeviceLock.waiting frames each wait of a worker's (the judge stops its candidate's processes
    there: red-team pass 29), once per wait, and a lock free at once calls nothing."""
    holder, waiter = gpu_lock(1), gpu_lock(1)
    framed: list[str] = []

    @contextlib.contextmanager
    def waiting():
        framed.append("in")
        yield
        framed.append("out")

    waiter.waiting = waiting
    phases = {"check": waiter.checking, "state": waiter.holding_state, "admission": waiter.holding_state}
    with phases[phase]():
        pass
    assert framed == []  # nobody else held anything
    inside, go = threading.Event(), threading.Event()

    def hold() -> None:
        with (holder.timing() if phase == "check" else holder.holding_state()):
            inside.set()
            go.wait(10)

    def hold_admission() -> None:  # as a worker inside admission, polling for its units
        held = try_file_lock(f"{holder.name}-admit")
        inside.set()
        go.wait(10)
        release_file_lock(held)

    t = _run(hold_admission if phase == "admission" else hold)
    _wait(inside, "the holder")
    threading.Timer(0.3, go.set).start()
    with phases[phase]():
        assert framed == ["in", "out"]  # the wait was framed, and over before the phase's work
    t.join(10)
