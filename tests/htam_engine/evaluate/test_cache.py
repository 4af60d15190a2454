"""The cache folder's locks: none that a sandbox's process can hold, whatever lock it takes on a
file it may read; against whoever unlinks or replaces their files, a judge that held the lock
before still excludes every other, and the next judge to open the name finds the file the others
lock; a link, folder or unwritable file planted at a lock's path is replaced, never followed.
Threads stand in for judges (record locks of open files conflict between open files, also within
one process)."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from cheats.harness import as_an_ordinary_user, in_forked_child
from htam_engine.evaluate import cache
from htam_engine.evaluate import seccomp
from htam_engine.evaluate.cache import build_lock_name, file_lock, release_file_lock, try_file_lock
from htam_engine.record_lock import EXCLUSIVE, record_lock


@pytest.fixture()
def locks(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path))
    return tmp_path / "locks"


def _taken_only_after(name: str, release) -> None:
    """A judge taking lock `name` waits until `release()` lets go of the one holding it."""
    got = threading.Event()

    def take() -> None:
        with file_lock(name):
            got.set()

    threading.Thread(target=take, daemon=True).start()
    assert not got.wait(0.3), "took the lock while another judge held it"
    release()
    assert got.wait(10)


@pytest.mark.parametrize("tamper", ["unlink", "replace"])
def test_a_lock_whose_file_was_unlinked_or_replaced_still_excludes(locks, tamper):
    with file_lock("time-cpu"):
        pass  # this process opened the file before the tampering, as a judge has
    path = locks / "time-cpu.lock"
    other = open(path, "a+")  # another judge, timing
    record_lock(other.fileno(), EXCLUSIVE)
    if tamper == "unlink":
        path.unlink()
    else:
        (locks / "planted").write_text("")
        os.replace(locks / "planted", path)
    _taken_only_after("time-cpu", other.close)
    # From then on the file at the path is the lock: a judge holding it there excludes this one.
    other = open(path, "a+")
    record_lock(other.fileno(), EXCLUSIVE)
    _taken_only_after("time-cpu", other.close)


def test_a_free_slot_is_found_after_its_file_was_unlinked(locks):
    # How devicelock collects its units of device memory: each slot tried without waiting.
    first = try_file_lock("slot0")
    assert first is not None
    try:
        (locks / "slot0.lock").unlink()
        assert try_file_lock("slot0") is None  # the unlinked slot, still held, is not handed out twice
        second = try_file_lock("slot1")
        assert second is not None
        release_file_lock(second)
    finally:
        release_file_lock(first)


def test_a_folders_usage_counts_bytes_on_disk_and_entries_and_stops_once_past_a_bound(tmp_path):
    from htam_engine.evaluate.cache import folder_usage

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.bin").write_bytes(b"x" * 100_000)
    (tmp_path / "sparse.bin").open("wb").truncate(50 << 20)  # 50 MB long, nothing on disk
    for i in range(20):
        (tmp_path / f"empty{i}").touch()
    used, entries = folder_usage(tmp_path)
    assert entries == 23 and 100_000 <= used < 1 << 20
    assert folder_usage(tmp_path / "missing") == (0, 0)
    assert folder_usage(tmp_path, stop_past=(1 << 30, 5))[1] == 6  # stopped at the entry past the bound


def test_the_locks_live_where_no_sandbox_may_write(locks):
    """A sandbox writes only cache.sandbox_writable_folders(): the timing lock a candidate replaced by
    a link (red-team pass 26) is out of its reach, and so is a build's lock, which its judge holds."""
    with file_lock("time-cpu"), file_lock(build_lock_name("k")):
        pass
    writable = [os.path.realpath(f) for f in cache.sandbox_writable_folders() + cache.sandbox_writable_folders("k")]
    for lock in ("time-cpu.lock", "build-k.lock"):
        path = os.path.realpath(locks / lock)
        assert os.path.exists(path) and not any(path.startswith(f + os.sep) for f in writable), (path, writable)


def _hold_as_a_sandbox(path, taker_exits: bool) -> tuple[int, int]:
    """A process under the sandboxes' seccomp filter that opens `path` for reading (all a sandbox
    may), locks it every way it can and keeps it; with `taker_exits`, a child of its takes the
    flock and exits, so /proc/locks names a dead process (red-team pass 28). Returns its pid and a
    descriptor to read "ready" from."""
    ready, said = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ready)
            refused = seccomp.install()
            held = os.open(path, os.O_RDONLY)
            if taker_exits:
                taker = os.fork()
                if taker == 0:
                    fcntl.flock(held, fcntl.LOCK_EX)
                    os._exit(0)
                os.waitpid(taker, 0)
            else:
                fcntl.flock(held, fcntl.LOCK_EX)
            tried = []
            for how in (lambda: fcntl.lockf(held, fcntl.LOCK_SH), lambda: record_lock(held, fcntl.F_RDLCK)):
                try:
                    how()
                    tried.append("took")
                except OSError:
                    tried.append("refused")
            os.write(said, f"{refused} {tried}".encode())
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(said)
    return pid, ready


@pytest.mark.parametrize("taker_exits", [False, True], ids=["held", "taken by a child that exited"])
def test_no_lock_a_sandbox_takes_on_a_lock_file_holds_up_a_judge(locks, taker_exits):
    """Red-team passes 27 and 28: a sandbox may read the lock files, and its flock held the judges'
    timing lock and every build lock; a record lock, which htam's are, it may not take at all."""
    with file_lock("time-cpu"):
        pass
    pid, ready = _hold_as_a_sandbox(locks / "time-cpu.lock", taker_exits)
    try:
        said = os.read(ready, 200).decode()
        assert said == "None ['refused', 'refused']", said  # the filter is on; no record lock was taken
        held = try_file_lock("time-cpu")
        assert held is not None, "a judge waits for a sandbox's lock"
        release_file_lock(held)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(ready)


@pytest.mark.parametrize("plant", ["link", "dangling link", "folder"])
def test_what_a_sandbox_plants_at_a_build_lock_is_replaced_not_followed(locks, tmp_path, plant):
    """Red-team pass 26 (cheat_lock_symlink): the judge opened a lock's path through a link to a file
    the sandbox may not write and created it there, or failed on a link to nowhere, on every later
    evaluation."""
    path = tmp_path / cache.LOCKS / "build-k.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "elsewhere" / "made-by-the-judge"
    if plant == "link":
        target.parent.mkdir()
    if plant == "folder":
        path.mkdir()
    else:
        path.symlink_to(target)
    with file_lock(build_lock_name("k")):
        pass
    assert not target.exists() and path.is_file() and not path.is_symlink()


def test_a_lock_file_left_without_the_owners_bits_is_taken_all_the_same(locks, tmp_path):
    def take() -> bool:
        as_an_ordinary_user()
        path = tmp_path / cache.LOCKS / "build-k.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o000)
        with file_lock(build_lock_name("k")):
            return True

    assert in_forked_child(take) is True


def test_a_folder_a_sandbox_left_unreadable_is_weighed_and_its_locks_folder_taken_all_the_same(locks, tmp_path):
    """A build folder with a subfolder made without the owner's bits is counted, not taken for empty
    (a candidate could hide files from the weighing so), and a lock folder so made still takes locks."""
    def weigh() -> dict:
        as_an_ordinary_user()
        hidden = tmp_path / "build" / "k" / "hidden"
        hidden.mkdir(parents=True)
        (hidden / "junk").write_bytes(b"j" * 8192)
        os.chmod(hidden, 0o000)
        folder = tmp_path / cache.LOCKS
        folder.mkdir()
        os.chmod(folder, 0o500)
        with file_lock(build_lock_name("k")):
            pass
        return {"entries": cache.folder_usage(tmp_path / "build" / "k")[1]}

    assert in_forked_child(weigh) == {"entries": 2}
