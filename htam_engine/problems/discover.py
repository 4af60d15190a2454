"""Find problem files in files and folders (recursively) and load each, keeping faults."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from htam_engine.problems import builtin as builtin_suite
from htam_engine.problems.model import Problem, ProblemError

_NUMBERED = re.compile(r"^(\d+)_")


def _order(path: Path) -> tuple:
    # KernelBench files are numbered: list 2_ before 10_
    m = _NUMBERED.match(path.name)
    return (str(path.parent), int(m.group(1)) if m else 1 << 30, path.name)


def expand(paths: list[str]) -> list[str]:
    """Files and folders -> problem refs; `builtin` is the whole built-in suite; built-in names stay names."""
    refs: list[str] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if raw == "builtin" and not p.exists():
            refs.extend(f"builtin:{n}" for n in builtin_suite.builtin_names())
        elif p.is_dir():
            files = [f for f in p.rglob("*.py") if not f.name.startswith("_") and f.is_file()]
            refs.extend(str(f) for f in sorted(files, key=_order))
        else:
            refs.append(raw)
    return refs


# A file whose top level or get_inputs() runs longer than this is listed as broken.
LOAD_SECONDS = 30.0


class _TooSlow(BaseException):
    """Raised by the alarm; a BaseException so the loader does not blame the file's code for it."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a load that hangs (only possible on the main thread, where signals arrive).

    An alarm someone else armed (a test runner's timeout) keeps its deadline: if it is due
    first, its own handler runs then; afterwards it is re-armed for the time it had left.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    theirs_left = signal.getitimer(signal.ITIMER_REAL)[0]
    theirs_first = 0 < theirs_left <= seconds
    start = time.monotonic()

    def expire(sig: int, frame: Any) -> None:
        if theirs_first and callable(previous):
            previous(sig, frame)
        raise _TooSlow()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, theirs_left if theirs_first else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if theirs_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(theirs_left - (time.monotonic() - start), 1e-3))


def discover(
    paths: list[str],
    overrides: dict[str, Any] | None = None,
    *,
    device: str = "cpu",
    seconds: float = LOAD_SECONDS,
) -> list[Problem | ProblemError]:
    """Load every problem under `paths`; a file that cannot be used appears as its ProblemError."""
    from htam_engine.problems.loader import load_problem

    out: list[Problem | ProblemError] = []
    for ref in expand(paths):
        try:
            with _time_limit(seconds):
                out.append(load_problem(ref, overrides, device=device))
        except ProblemError as exc:
            out.append(exc)
        except _TooSlow:
            out.append(ProblemError(ref, f"took longer than {seconds:g} s to load (module code or get_inputs)"))
    return out
