"""`htam problems PATH... [--json]`: list problems in files, folders and the built-in suite."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from htam_engine.problems import Problem, ProblemError, discover, parse_overrides

_EPILOG = """\
PATH is a problem file, a folder (searched recursively for *.py), a built-in problem
name, or `builtin` for the whole built-in suite. Broken files are listed with a one-line
error. Exit status: 0 when at least one problem loaded, 2 when every given path failed.
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "problems",
        help="list problems in files or folders",
        description="List operator problems (KernelBench format): id, level, family, input shapes.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="problem file, folder, built-in name, or `builtin`")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a module-level constant while the file runs (repeatable)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda lists the sizes a GPU run uses (the file's GPU_SIZES)")
    p.add_argument("--json", action="store_true", help="print one JSON list of problems")
    p.set_defaults(handler=handle)


def _shapes(problem: Problem) -> str:
    parts = []
    for spec in problem.inputs:
        if spec.shape or spec.dtype not in ("int", "float", "bool"):
            parts.append(("x".join(str(s) for s in spec.shape) or "scalar") + f" {spec.dtype}")
        else:
            parts.append(spec.dtype)
    return ", ".join(parts) or "-"


def _row(item: Problem | ProblemError) -> dict[str, Any]:
    if isinstance(item, ProblemError):
        return {"id": None, "path": item.path, "error": str(item)}
    doc = item.to_dict()
    doc["error"] = None
    return doc


def handle(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.overrides)
    items: list[Problem | ProblemError] = []
    for raw in args.paths:
        found = discover([raw], overrides, device=args.device)
        if not found:
            found = [ProblemError(raw, "no problem files found")]
        items.extend(found)
    loaded = [i for i in items if isinstance(i, Problem)]
    if args.json:
        from htam_engine.cli import print_json

        print_json([_row(i) for i in items])
    else:
        _print_table(items)
        print(f"{len(loaded)} problem(s), {len(items) - len(loaded)} broken", file=sys.stderr)
    return 0 if loaded else 2


def _print_table(items: list[Problem | ProblemError]) -> None:
    rows = []
    for item in items:
        if isinstance(item, ProblemError):
            continue
        note = f"  (needs {', '.join(item.missing_modules)} to run)" if item.missing_modules else ""
        level = f"L{item.level}" if item.level is not None else "-"
        rows.append((item.id, level, item.family.value, _shapes(item), (item.path or "") + note))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(4)]
    for item in items:
        if isinstance(item, ProblemError):
            print(f"BROKEN  {item}")
            continue
        r = rows.pop(0)
        print("  ".join(f"{col:<{w}}" for col, w in zip(r, widths)) + f"  {r[4]}")

