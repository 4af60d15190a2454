"""Find problem files in files and folders (recursively) and load each, keeping faults."""

from __future__ import annotations

import re
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


def discover(paths: list[str], overrides: dict[str, Any] | None = None, *, device: str = "cpu") -> list[Problem | ProblemError]:
    """Load every problem under `paths`; a file that cannot be used appears as its ProblemError."""
    from htam_engine.problems.loader import load_problem

    out: list[Problem | ProblemError] = []
    for ref in expand(paths):
        try:
            out.append(load_problem(ref, overrides, device=device))
        except ProblemError as exc:
            out.append(exc)
    return out
