"""The device lock's protocol, with threads standing in for workers (fcntl locks conflict
between open files, also within one process): checkers overlap, a timer has the device to
itself and is not starved by checkers arriving after it, slots bound live state."""

from __future__ import annotations

import threading
import time

import pytest

from htam_engine.evaluate import devicelock
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
