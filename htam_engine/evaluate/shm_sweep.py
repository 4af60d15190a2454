"""What a sandbox leaves in /dev/shm goes when the sandbox goes.

Every sandbox may write /dev/shm (landlock.py: Python's multiprocessing semaphores live there, and
torch.compile's worker pool uses them), and a file there is memory that belongs to no process: no
sandbox's resident size or address-space limit counts it, and RLIMIT_FSIZE bounds one file, not
how many. A candidate that wrote six 256 MB files there on import left 1.5 GB of the box's memory
taken after its evaluation and after the next one (red-team pass 23, cheat_shm_leftover); enough
of them would starve or kill every later evaluation, honest ones included.

So the zygote notes what /dev/shm holds when it forks a sandbox (`present`) and, when it reaps the
sandbox, removes what appeared since that no process holds open or mapped (`remove_left`). A
segment some running program uses (another sandbox's semaphore, any other program's shared
memory) is held by it and stays; what nobody holds can only be found again by name, and a
sandbox's names die with it. Entries are told apart by inode: a tmpfs numbers inodes afresh.
"""

from __future__ import annotations

import os
from pathlib import Path

from htam_engine.evaluate import owned_tree

SHM = Path("/dev/shm")


def present(folder: Path = SHM) -> frozenset[int]:
    """The inodes of the entries in `folder` now (empty where it cannot be read)."""
    try:
        with os.scandir(folder) as it:
            return frozenset(e.inode() for e in it)
    except OSError:
        return frozenset()


def _held(device: int) -> set[int]:
    """The inodes on `device` that a process this user can look at has open or mapped."""
    held: set[int] = set()
    major, minor = os.major(device), os.minor(device)
    maps_device = f"{major:02x}:{minor:02x}"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if st.st_dev == device:
                    held.add(st.st_ino)
            with open(f"/proc/{pid}/maps") as maps:
                for line in maps:
                    fields = line.split(maxsplit=5)
                    if len(fields) >= 5 and fields[3] == maps_device:
                        held.add(int(fields[4]))
        except OSError:  # gone meanwhile, or another user's
            continue
    return held


def _ours(entry: os.DirEntry) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_uid == os.getuid()
    except OSError:
        return False


def remove_left(before: frozenset[int], folder: Path = SHM) -> int:
    """Remove the entries of `folder` that are not in `before` (present's answer at the sandbox's
    fork), belong to this user and that no process holds open or mapped; the bytes removed."""
    try:
        with os.scandir(folder) as it:
            new = [e for e in it if e.inode() not in before and _ours(e)]
        device = os.stat(folder).st_dev
    except OSError:
        return 0
    if not new:
        return 0
    held = _held(device)
    removed = 0
    for entry in new:
        try:
            inodes, size = owned_tree.contents(entry.path)  # a folder left unreadable is opened first
        except OSError:  # removed meanwhile (its program cleaned up), or not ours to read
            continue
        if not inodes & held and owned_tree.remove(entry.path):
            removed += size
    return removed
