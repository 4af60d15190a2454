"""`htam compare RESULTS...`: batch results (results.json files or batch folders) side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from htam_engine.errors import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("compare", help="compare batch results (e.g. ablations) side by side",
                              description=__doc__)
    p.add_argument("results", nargs="+", help="results.json files or batch --out folders")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    p.set_defaults(handler=handle)


def column_name(doc: dict[str, Any]) -> str:
    """A short column title: the ablation when there is one, else the folder name."""
    path = Path(doc["_path"])
    folder = path.parent.name if path.name == "results.json" else path.stem
    ablation = (doc.get("settings") or {}).get("ablation")
    return f"{folder} ({ablation})" if ablation else folder


def handle(args: argparse.Namespace) -> int:
    from htam_engine.loop.batch import load_results
    from htam_engine.loop.report import comparison

    if not args.results:
        raise UsageError("give at least one results file")
    docs = [load_results(p) for p in args.results]
    for d in docs:
        d["_name"] = column_name(d)
    table = comparison(docs)
    if args.json:
        from htam_engine.cli import print_json

        print_json(table)
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="htam compare")
    t.add_column("metric")
    for name in table["columns"]:
        t.add_column(name, justify="right")
    for row in table["rows"]:
        t.add_row(row["metric"], *row["values"])
    Console(file=sys.stdout, width=max(100, 40 + 24 * len(docs))).print(t)
    return 0
