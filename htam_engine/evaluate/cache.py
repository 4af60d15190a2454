"""The on-disk cache: compiled extensions per source hash, candidate files, locks.

Everything lives under the `cache_dir` setting (`HTAM_CACHE_DIR`, default `~/.cache/htam`), so separate htam
processes (a batch run and the app) share builds and serialize timing on a device.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import stat
import threading
from pathlib import Path
from typing import Any, Iterator

from htam_engine import settings
from htam_engine.evaluate import owned_tree
from htam_engine.record_lock import EXCLUSIVE, SHARED, UNLOCK, record_lock


# The cache's folders: extension builds per candidate key, candidate files, the lock files
# (cache.file_lock's) and precompiled headers (pch.py). A sandbox's build writes into the first two
# and nowhere else in the cache (SANDBOX_WRITABLE; landlock.py). The locks live where no sandbox may
# write: in a folder a sandbox could write, a candidate replaced the timing lock by a link, and the
# judge, re-anchoring the lock, created and locked a file wherever the link pointed, or failed every
# later evaluation where it pointed nowhere (red-team pass 26, cheat_lock_symlink). The precompiled
# headers only the judge writes, since every later build with their flags reads them.
BUILD, CANDIDATES, LOCKS, PCH = "build", "candidates", "locks", "pch"
SANDBOX_WRITABLE = (BUILD, CANDIDATES)
# A build's lock (build_lock_name) is this and its key.
BUILD_LOCK_PREFIX = "build-"
# The most a candidate's build folder may hold once its sandbox is gone: it is the one folder of
# the cache that a candidate's code may write and that outlives it, and a build leaves well under a
# MB here for C++ and a few MB for CUDA. RLIMIT_FSIZE (sandbox_file_mb) bounds one file, not how
# many: 33 files of 8 MB each passed it (red-team pass 23), and repeated, they fill the disk under
# every later evaluation. Past either bound the judge removes the folder (Evaluation._weigh_build).
BUILD_FOLDER_MAX_BYTES = 256 << 20
BUILD_FOLDER_MAX_ENTRIES = 4096


def cache_dir() -> Path:
    root = settings.cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    return root


def sandbox_writable_folders(build_key: str | None = None) -> list[str]:
    """The cache's folders a sandbox may write beneath (SANDBOX_WRITABLE), made where missing. With
    `build_key` (a candidate sandbox once its candidate is known, its file written): only that
    key's build folder of the builds, and no candidate files."""
    names = SANDBOX_WRITABLE if build_key is None else ()
    folders = [cache_dir() / name for name in names]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    return [str(f) for f in folders] + ([str(build_dir(build_key))] if build_key is not None else [])


def sha256_text(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def candidate_key(code: str, backend: str, device_kind: str, torch_version: str) -> str:
    """The compile-cache key: same source, backend, device kind and torch build -> same binary."""
    return sha256_text(code, backend, device_kind, torch_version)[:20]


def build_dir(key: str) -> Path:
    """The per-candidate folder that load_inline builds into."""
    path = cache_dir() / BUILD / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def _listed(folder: str) -> Any:
    """os.scandir(folder); one a sandbox made unreadable gets the owner's bits back first."""
    try:
        return os.scandir(folder)
    except PermissionError:
        owned_tree.give_back_bits(folder)
        return os.scandir(folder)


def folder_usage(path: Path, stop_past: tuple[int, int] | None = None) -> tuple[int, int]:
    """(bytes on disk, entries) beneath `path`, links not followed; (0, 0) where it is missing.
    stop_past (bytes, entries): stop counting once either is passed (a million empty files would
    otherwise be walked to the last only to be removed)."""
    max_used, max_entries = stop_past or (math.inf, math.inf)
    used = entries = 0
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        try:
            with _listed(folder) as it:
                for entry in it:
                    entries += 1
                    with contextlib.suppress(OSError):
                        used += entry.stat(follow_symlinks=False).st_blocks * 512
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    if used > max_used or entries > max_entries:
                        return used, entries
        except OSError:
            continue
    return used, entries


def built_marker(key: str) -> Path:
    """Written after a candidate imported successfully: its next import is a cache hit."""
    return build_dir(key) / ".htam-built"


def _lock_path(name: str) -> Path:
    folder = cache_dir() / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.lock"


def build_lock_name(key: str) -> str:
    """The lock of `key`'s build folder: its judge holds it while the folder is checked and its
    sandbox builds or imports the key."""
    return BUILD_LOCK_PREFIX + key


# Per lock path, a descriptor of the file this process first found there, kept open (never
# locked) for the life of the process: whoever unlinks the path later cannot take from it the
# file that every judge which opened it before still locks. A forked child starts afresh (a
# sandbox closes every inherited descriptor, and their numbers are reused).
_ANCHORS: dict[str, int] = {}
_ANCHORS_PID = os.getpid()
_ANCHORS_GUARD = threading.Lock()


def _anchors() -> dict[str, int]:
    global _ANCHORS_PID
    if _ANCHORS_PID != os.getpid():
        _ANCHORS.clear()
        _ANCHORS_PID = os.getpid()
    return _ANCHORS


def _open_lock_file(path: Path) -> int:
    """A lock file at `path`, never through a link: where a link, a folder or a file the owner may
    not write is found there (a sandbox may take the bits off a file it cannot write), that goes
    and a plain file takes its place."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            if e.errno == errno.EACCES:  # the folder or the file made without the owner's bits
                owned_tree.give_back_bits(path.parent)
                owned_tree.give_back_bits(path)
            elif e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                owned_tree.remove(path)
            else:
                raise
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)  # a FIFO, say
        owned_tree.remove(path)
    raise OSError(errno.EPERM, "no plain lock file could be made here", str(path))


def _fresh_open(path: Path) -> int:
    """A new open file (so its lock conflicts with every other, threads of this process too) of
    the file this process anchored at `path`, even where that file was unlinked since."""
    with _ANCHORS_GUARD:
        anchors = _anchors()
        anchor = anchors.get(str(path))
        if anchor is None:
            anchor = anchors[str(path)] = _open_lock_file(path)
        try:
            return os.open(f"/proc/self/fd/{anchor}", os.O_RDWR | os.O_CLOEXEC)  # a write lock needs writing
        except OSError:  # no /proc: the file at the path
            return _open_lock_file(path)


def _reanchor(path: Path) -> int:
    """The file now at `path` becomes the anchor; a new open file of it."""
    fd = _open_lock_file(path)
    with _ANCHORS_GUARD:
        anchors = _anchors()
        old = anchors.get(str(path))
        anchors[str(path)] = os.dup(fd)
    if old is not None:
        os.close(old)
    return fd


def _is_at(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (not unlinked, not replaced)."""
    try:
        at = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at.st_dev, at.st_ino)


def _take(name: str, shared: bool, wait: bool) -> list[int] | None:
    """The lock `name`, shared or exclusive (not waiting: None while another holds it in a
    conflicting mode). A lock file that was unlinked or replaced since this process anchored it is
    locked first (the judges that opened it before wait on it), then the file now at the path,
    until the one locked last is still the path's. Returns the descriptors locked, to let go of."""
    path = _lock_path(name)
    kind = SHARED if shared else EXCLUSIVE
    fd, held = _fresh_open(path), []
    while True:
        if not record_lock(fd, kind, wait):
            os.close(fd)
            _let_go(held)
            return None
        held.append(fd)
        if _is_at(fd, path):
            return held
        fd = _reanchor(path)


def _let_go(held: list[int]) -> None:
    for fd in reversed(held):
        record_lock(fd, UNLOCK)
        os.close(fd)


@contextlib.contextmanager
def file_lock(name: str, shared: bool = False) -> Iterator[None]:
    """An exclusive (or shared) lock across every process using this cache dir (record_lock.py:
    none a sandbox can hold). It dies with its holder, so a worker killed mid-compile or mid-timing
    never leaves a stale lock behind."""
    held = take_file_lock(name, shared)
    try:
        yield
    finally:
        _let_go(held)


def try_file_lock(name: str, shared: bool = False) -> list[int] | None:
    """The lock `name` (exclusive, or shared) if it can be had now (None while another holds it
    in a conflicting mode), to hand back to `release_file_lock`; the kernel frees it if this
    process dies first."""
    return _take(name, shared, wait=False)


def take_file_lock(name: str, shared: bool = False) -> list[int]:
    """The lock `name`, waiting for it, to hand back to `release_file_lock` (for a hold that a
    `with` block cannot frame: one let go of and taken again in the middle of its work)."""
    held = _take(name, shared, wait=True)
    assert held is not None  # a waiting lock is always taken
    return held


def release_file_lock(held: list[int]) -> None:
    _let_go(held)


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
