"""One KernelBench table from several kb_table.py runs: a run cut off by its deadline, then a run of
the problems it did not reach (`kb_table.py --problems <those>`), as one table.

Each problem's row comes from the first record that ran it (a problem cut off mid-run keeps its
steps so far, as in that run's own table); the level figures are recomputed over the merged rows
by kb_table.py's own summary. Each row's speedups are against the baselines timed in its own run.

    python3 tests/bench/kb_table_merge.py RUN1/kb_table.json RUN2/kb_table.json --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_table import _level_from, level_summaries, markdown_table  # noqa: E402


def merge(records: list[dict]) -> tuple[list[dict], dict[str, str], list[str], dict[str, int | None]]:
    """(rows, unsupported, not reached, level of every problem) over the records, first run wins."""
    rows: dict[str, dict] = {}
    refused: dict[str, str] = {}
    level_of: dict[str, int] = {}
    for rec in records:
        for r in rec["rows"]:
            rows.setdefault(r["problem"], r)
            level_of[r["problem"]] = int(r["level"])
        refused.update(rec["unsupported"])
        for pid in [*rec["unsupported"], *rec["not_reached"]]:
            level_of.setdefault(pid, _level_from(pid))
    not_reached = [pid for pid in level_of if pid not in rows and pid not in refused]
    return list(rows.values()), refused, not_reached, level_of


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+", help="kb_table.json files, earliest run first")
    ap.add_argument("--out", help="folder for kb_table.md and kb_table.json (default: print only)")
    args = ap.parse_args()
    records = [json.loads(Path(p).read_text()) for p in args.records]
    rows, refused, not_reached, level_of = merge(records)
    summary = level_summaries(rows, level_of, refused, sorted({lv for lv in level_of.values() if lv is not None}))
    cut = sorted({pid for rec in records for pid in rec.get("cut_off", []) if pid in {r["problem"] for r in rows}})
    runs = "; ".join(f"{path}: {r['settings']['backend']} on {r['settings']['device']}, at most {r['settings']['steps']} "
                     f"steps, {r['settings']['trials']} trials, {r['wall_s']:.0f} s of a {r['settings']['deadline']:.0f} s "
                     f"deadline" for path, r in zip(args.records, records))
    header = (f"Merged from {len(records)} kb_table.py runs ({runs}); each row's speedups are against the baselines "
              f"of its own run; {len(cut)} cut off mid-run (their steps so far count), {len(not_reached)} not reached")
    table = markdown_table(rows, refused, not_reached, summary, header)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "kb_table.md").write_text(table)
        (out / "kb_table.json").write_text(json.dumps({"summary": summary, "rows": rows, "unsupported": refused,
                                                       "cut_off": cut, "not_reached": not_reached,
                                                       "merged_from": args.records}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
