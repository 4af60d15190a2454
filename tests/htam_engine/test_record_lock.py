"""record_lock: the lock between htam's processes, as a judge sees it from two open files of one
lock file (two judges, or two threads of one)."""

from __future__ import annotations

import os
import threading

from htam_engine.record_lock import EXCLUSIVE, SHARED, UNLOCK, record_lock


def _opens(path, n: int) -> list[int]:
    return [os.open(path, os.O_RDWR | os.O_CREAT, 0o644) for _ in range(n)]


def test_two_open_files_exclude_each_other_as_their_modes_say(tmp_path):
    a, b = _opens(tmp_path / "l.lock", 2)
    assert record_lock(a, SHARED, wait=False) and record_lock(b, SHARED, wait=False)  # readers share
    assert not record_lock(b, EXCLUSIVE, wait=False)  # a writer waits for every other reader
    record_lock(a, UNLOCK)
    assert record_lock(b, EXCLUSIVE, wait=False)  # b's own shared lock is no obstacle to itself
    assert not record_lock(a, SHARED, wait=False)
    os.close(b)  # the lock dies with its open file, as with a process killed holding it
    assert record_lock(a, EXCLUSIVE, wait=False)
    os.close(a)


def test_a_waiting_lock_is_taken_once_the_holder_lets_go(tmp_path):
    a, b = _opens(tmp_path / "l.lock", 2)
    record_lock(a, EXCLUSIVE)
    got = threading.Event()
    threading.Thread(target=lambda: (record_lock(b, EXCLUSIVE), got.set()), daemon=True).start()
    assert not got.wait(0.3)
    record_lock(a, UNLOCK)
    assert got.wait(10)
    os.close(a)
    os.close(b)
