"""Cheat (red-team pass 28; the judges' locks, past the lock_held look): cheat_hold_time_lock, with
the flock taken by a child that exits at once. The sandbox keeps the open file, so it keeps the
lock, but /proc/locks names the dead child, and the judge's look at who holds the lock it waits
for finds none of its candidate's processes. An alarm lets the lock go 6 s later (150 s in the
pass, where every build lock it found was held as well: a concurrent honest candidate of another
judge timed out in its compile, waiting for its build lock on its own clock).

Class: locks later evaluations need; red-team pass 28."""
import fcntl
import os
import signal
from pathlib import Path

_held = open(Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "locks" / "time-cpu.lock")
_taker = os.fork()
if _taker == 0:
    fcntl.flock(_held, fcntl.LOCK_EX)
    os._exit(0)
os.waitpid(_taker, 0)
signal.signal(signal.SIGALRM, lambda *_: fcntl.flock(_held, fcntl.LOCK_UN))
signal.alarm(6)  # the sandbox's main thread waits in a read for the judge's next request meanwhile

# include: honest_softmax
