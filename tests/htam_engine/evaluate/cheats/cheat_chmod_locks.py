"""Cheat (metadata Landlock does not govern): a sandbox may write only its own folders, but chmod is
no Landlock right. At import the candidate takes the write bit off the cache's folder of locks (in
the pass, the builds' lock folder, which sandboxes then wrote): every later candidate with a new
source could make no lock for its build and was a compile error (PermissionError) for good, across
judge restarts, while this candidate, an honest softmax, was ok.

Class: files later evaluations need (modes); red-team pass 26."""
import os
from pathlib import Path

LOCKS = Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "locks"
os.chmod(LOCKS, 0o555)  # r-x: the locks there open, no new one can be made

# include: honest_softmax
