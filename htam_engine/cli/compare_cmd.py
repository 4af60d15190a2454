"""`htam compare RESULTS...`: batch results (results.json files or batch folders) side by side,
or the ablation tables of experiment folders (tests/bench/gpu_ablation.py writes them)."""

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
    experiments = [p for p in args.results if is_experiment(p)]
    if experiments:
        if len(experiments) != len(args.results):
            raise UsageError("compare either batch results or experiment folders, not both")
        return print_experiments(experiments, as_json=args.json)
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


def is_experiment(path: str) -> bool:
    from htam_engine.experiment.run import META

    p = Path(path)
    return (p / META).is_file() if p.is_dir() else p.name == META


def print_experiments(paths: list[str], *, as_json: bool) -> int:
    """The ablation tables of each experiment, recomputed from its run records."""
    from htam_engine.experiment import load_outcome
    from htam_engine.experiment.report import facts, grids, measured_view, summary_doc
    from htam_engine.experiment.stats import summarize

    done = []
    for path in paths:
        outcome = load_outcome(path if Path(path).is_dir() else Path(path).parent)
        done.append((path, outcome, summarize(outcome.spec, outcome.records, outcome.bank_records)))
    if as_json:
        from htam_engine.cli import print_json

        print_json([summary_doc(o, s) for _, o, s in done])
        return 0
    from rich.console import Console

    console = Console(file=sys.stdout, width=200)
    for path, outcome, summary in done:
        console.print(f"[bold]{path}[/bold]")
        for line in facts(outcome, summary):
            console.print(line, highlight=False)
        for g in grids(summary):
            console.print(_table(g))
        measured = measured_view(outcome)
        if measured is not None:
            console.print(measured[0], highlight=False)
            for g in measured[1]:
                console.print(_table(g))
    return 0


def _table(g: Any) -> Any:
    """A report grid as a rich table."""
    from rich.table import Table

    t = Table(title=g.title)
    for i, col in enumerate(g.columns):
        t.add_column(col, justify="left" if i == 0 else "right")
    for row in g.rows:
        t.add_row(*row)
    return t
