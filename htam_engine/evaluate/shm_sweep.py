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
sandbox's names die with it. (Where htam is not root, what a non-dumpable process holds, as every
other sandbox is, cannot be read from /proc: those files look unheld, and their names go.
Red-team pass 30; not mended, ISOLATION.md.) Entries are told apart by inode: a tmpfs numbers inodes afresh.

What a sandbox alive beside the reaped one (another judge's, another test worker's) is making can
be unheld for an instant, between its creation and its opening (a folder it is filling, a file
between a write and its map): one look at the holders removed such a folder from under its maker.
So what nobody held at a first look is looked at again SECOND_LOOK_S later, and only what nobody
holds then either goes: the reaped sandbox's processes are gone, so what it left is unheld both
times. (A live program that keeps a file there unheld for longer, to open it by name later, loses
it still; ISOLATION.md.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from htam_engine.evaluate import owned_tree

SHM = Path("/dev/shm")
SECOND_LOOK_S = 0.5


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
    fork), belong to this user and that no process holds open or mapped, at a first look nor
    SECOND_LOOK_S later; the bytes removed."""
    try:
        with os.scandir(folder) as it:
            new = [e for e in it if e.inode() not in before and _ours(e)]
        device = os.stat(folder).st_dev
    except OSError:
        return 0
    unheld = _unheld(new, device)
    if not unheld:
        return 0
    time.sleep(SECOND_LOOK_S)
    removed = 0
    for entry, size in _unheld([entry for entry, _ in unheld], device):
        if owned_tree.remove(entry.path):
            removed += size
    return removed


def _unheld(entries: list[os.DirEntry], device: int) -> list[tuple[os.DirEntry, int]]:
    """(entry, bytes) of those of `entries` of which no process holds a file open or mapped."""
    if not entries:
        return []
    held = _held(device)
    out = []
    for entry in entries:
        try:
            inodes, size = owned_tree.contents(entry.path)  # a folder left unreadable is opened first
        except OSError:  # removed meanwhile (its program cleaned up), or not ours to read
            continue
        if not inodes & held:
            out.append((entry, size))
    return out
