"""Cheat (red-team pass 28; the judges' locks, past a look at who holds them): cheat_hold_time_lock,
with the flock taken by a child that exits at once. The sandbox keeps the open file, so it keeps
the lock, but /proc/locks names the dead child, and the judge's look at who held the lock it waited
for (since replaced by locks no sandbox may take) found none of its candidate's processes. In the
pass an alarm let the lock go after 150 s, and every build lock it found was held as well: a
concurrent honest candidate of another judge timed out in its compile, waiting for its build lock
on its own clock. Here the lock is kept for as long as the sandbox lives.

Class: locks later evaluations need; red-team pass 28."""
import fcntl
import os
from pathlib import Path

_held = open(Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "locks" / "time-cpu.lock")
_taker = os.fork()
if _taker == 0:
    fcntl.flock(_held, fcntl.LOCK_EX)
    os._exit(0)
os.waitpid(_taker, 0)

# include: honest_softmax
