"""The built-in problem suite: KernelBench-format files under level1/, level2/, level3/.

A problem's name is its file stem (unique across levels); its id is ``builtin:NAME``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from htam_engine.problems.model import ProblemError

ROOT = Path(__file__).resolve().parent

# The problem the app opens when nothing else is given: an elementwise chain a fused kernel wins on.
DEMO_PROBLEM = "affine_gelu_scale"


@lru_cache(maxsize=1)
def _index() -> dict[str, Path]:
    index: dict[str, Path] = {}
    for level_dir in sorted(ROOT.glob("level[0-9]*")):
        for path in sorted(level_dir.glob("*.py")):
            if not path.name.startswith("_"):
                index[path.stem] = path
    return index


def builtin_names() -> list[str]:
    """Names of the built-in problems, level by level."""
    return list(_index())


def builtin_path(name: str) -> Path:
    path = _index().get(name.removeprefix("builtin:"))
    if path is None:
        raise ProblemError(f"builtin:{name}", "no such built-in problem (see `htam problems builtin`)")
    return path


def builtin_paths() -> list[Path]:
    return list(_index().values())


def name_of(path: Path) -> str | None:
    """The built-in name of `path`, or None when it is not a built-in problem file."""
    try:
        resolved = path.resolve()
    except OSError:
        return None
    hit = _index().get(resolved.stem)
    return resolved.stem if hit is not None and hit == resolved else None
