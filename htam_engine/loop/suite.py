"""What `htam batch SUITE...` runs: the built-in suite, folders, problem files, or list files.

A list file is any file that is not a `.py` problem: one path (or built-in name) a line,
blank lines and `#` comments ignored, relative paths taken from the list file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError
from htam_engine.problems.model import Problem, ProblemError


@dataclass(slots=True)
class Suite:
    problems: list[Problem] = field(default_factory=list)
    broken: list[ProblemError] = field(default_factory=list)


def _expand_lists(items: list[str], depth: int = 0) -> list[str]:
    out: list[str] = []
    for raw in items:
        p = Path(raw).expanduser()
        if p.is_file() and p.suffix != ".py":
            if depth > 3:
                raise InputError(f"{raw}: list files nest too deeply")
            try:
                lines = p.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{raw}: cannot read the list: {exc}") from None
            entries = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
            resolved = [e if Path(e).is_absolute() or not (p.parent / e).exists() else str(p.parent / e)
                        for e in entries]
            out.extend(_expand_lists(resolved, depth + 1))
        else:
            out.append(raw)
    return out


def load_suite(items: list[str], *, device: str = "cpu", levels: set[int] | None = None,
               limit: int | None = None, overrides: dict[str, Any] | None = None) -> Suite:
    """The problems to run. `overrides` apply to each problem that has the constant (a suite's
    files differ in their constants; `--set batch_size=4` must not break the others)."""
    from htam_engine.problems import discover, with_overrides

    suite = Suite()
    seen: set[str] = set()
    for found in discover(_expand_lists(items), None, device=device):
        if isinstance(found, ProblemError):
            suite.broken.append(found)
            continue
        if levels and found.level not in levels:
            continue
        if found.id in seen:
            continue
        mine = {k: v for k, v in (overrides or {}).items() if k in found.constants}
        if mine:
            try:
                found = with_overrides(found, mine)
            except ProblemError as exc:
                suite.broken.append(exc)
                continue
        seen.add(found.id)
        suite.problems.append(found)
        if limit is not None and len(suite.problems) >= limit:
            break
    return suite
