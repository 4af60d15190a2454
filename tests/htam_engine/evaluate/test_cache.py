"""The cache folder's locks against a sandbox that unlinks or replaces their files (it can write
the builds' locks' folder): a judge that held the lock before still excludes every other, and
the next judge to open the name finds the file the others lock; a link, folder or unwritable
file planted at a lock's path is replaced, never followed. Threads stand in for judges (fcntl
locks conflict between open files, also within one process)."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest

from cheats.harness import as_an_ordinary_user, in_forked_child
from htam_engine.evaluate import cache
from htam_engine.evaluate.cache import build_lock, file_lock, release_file_lock, try_file_lock


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
    fcntl.flock(other.fileno(), fcntl.LOCK_EX)
    if tamper == "unlink":
        path.unlink()
    else:
        (locks / "planted").write_text("")
        os.replace(locks / "planted", path)
    _taken_only_after("time-cpu", other.close)
    # From then on the file at the path is the lock: a judge holding it there excludes this one.
    other = open(path, "a+")
    fcntl.flock(other.fileno(), fcntl.LOCK_EX)
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


def test_the_judges_locks_live_where_no_sandbox_may_write_and_the_builds_where_it_builds(locks):
    """A sandbox writes only cache.sandbox_writable_folders(): the timing lock a candidate replaced by
    a link (red-team pass 26) is out of its reach; a build's lock, which the sandbox takes, is not."""
    with file_lock("time-cpu"), build_lock("k"):
        pass
    writable = [os.path.realpath(f) for f in cache.sandbox_writable_folders()]
    judges = os.path.realpath(locks / "time-cpu.lock")
    builds = os.path.realpath(locks.parent / cache.BUILD_LOCKS / "build-k.lock")
    assert os.path.exists(judges) and os.path.exists(builds)
    assert not any(judges.startswith(f + os.sep) for f in writable), (judges, writable)
    assert any(builds.startswith(f + os.sep) for f in writable), (builds, writable)


@pytest.mark.parametrize("plant", ["link", "dangling link", "folder"])
def test_what_a_sandbox_plants_at_a_build_lock_is_replaced_not_followed(locks, tmp_path, plant):
    """Red-team pass 26 (cheat_lock_symlink): the judge opened a lock's path through a link to a file
    the sandbox may not write and created it there, or failed on a link to nowhere, on every later
    evaluation."""
    path = tmp_path / cache.BUILD_LOCKS / "build-k.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "elsewhere" / "made-by-the-judge"
    if plant == "link":
        target.parent.mkdir()
    if plant == "folder":
        path.mkdir()
    else:
        path.symlink_to(target)
    with build_lock("k"):
        pass
    assert not target.exists() and path.is_file() and not path.is_symlink()


def test_a_lock_file_left_without_the_owners_bits_is_taken_all_the_same(locks, tmp_path):
    def take() -> bool:
        as_an_ordinary_user()
        path = tmp_path / cache.BUILD_LOCKS / "build-k.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o000)
        with build_lock("k"):
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
        folder = tmp_path / cache.BUILD_LOCKS
        folder.mkdir()
        os.chmod(folder, 0o500)
        with build_lock("k"):
            pass
        return {"entries": cache.folder_usage(tmp_path / "build" / "k")[1]}

    assert in_forked_child(weigh) == {"entries": 2}
