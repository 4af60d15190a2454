"""Cheat (the judges' locks, which a sandbox may read): the candidate opens the CPU timing lock's
file read-only and flocks it, which needs no more, and keeps it. While the judges' locks were
flocks, every judge on the machine waited to time for as long as it held it, its own judge too,
for the hour a lock wait may last, before the engine gave up on that judge (a harness error, not
the candidate's). In the pass the lock was let go by a timer after 20 s: ok, no finding, every
other judge stalled meanwhile. It tries a record lock as well, which its filter refuses.

Class: locks later evaluations need; red-team pass 27."""
import fcntl
import os
from pathlib import Path

_LOCK = Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "locks" / "time-cpu.lock"
_held = open(_LOCK)  # kept: the lock lasts as long as the sandbox
fcntl.flock(_held, fcntl.LOCK_EX)
try:
    fcntl.lockf(_held, fcntl.LOCK_SH)  # a record lock, of the kind htam's locks are
except OSError:
    pass

# include: honest_softmax
