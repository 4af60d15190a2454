"""Locks between htam's processes: record locks of an open file (fcntl's F_OFD_SETLK), not flocks.

A sandbox may read every file, lock files too, and a flock needs no more than a file open for
reading: a candidate's flock on the judges' timing lock stalled every judge on the machine
(red-team pass 27), and one taken by a child that then exited was named in /proc/locks by no
process of its sandbox, so no judge could tell whom to stop (pass 28; with every build lock held
so, a concurrent honest candidate of another judge timed out in its compile). A flock and a
record lock never conflict on a local file system, and no sandbox may take a record lock
(seccomp.py refuses it), so nothing a sandbox does holds one of htam's. (On NFS a flock is emulated
by a record lock, and the two conflict: htam's cache belongs on a local disk.)

Like a flock, such a lock belongs to one open file: two opens of a file conflict, in threads of one
process too, and a lock dies with the last descriptor of its open file, so a process killed while
holding one leaves nothing stale. (A process's traditional record locks, fcntl.lockf's, conflict
with these, but any close of the file by that process lets them go.)
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct

# struct flock: type, whence, start, length (0: to the file's end, wherever that is), pid (0 here)
_FLOCK = struct.Struct("hhqqi4x")
EXCLUSIVE, SHARED, UNLOCK = fcntl.F_WRLCK, fcntl.F_RDLCK, fcntl.F_UNLCK


def whole_file(kind: int) -> bytes:
    """The struct flock that fcntl's lock commands take, for `kind` over all of a file."""
    return _FLOCK.pack(kind, os.SEEK_SET, 0, 0, 0)


def record_lock(fd: int, kind: int, wait: bool = True) -> bool:
    """Lock all of `fd`'s file EXCLUSIVE (the file open for writing) or SHARED (for reading), or
    let go of it (UNLOCK). False where `wait` is off and another holds it in a conflicting mode."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK, whole_file(kind))
    except OSError as e:
        if not wait and e.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True
