"""`htam memory show [BANK] [--json]`: what the memory bank holds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError

TOP = 5  # strategies and transitions shown per direction


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("memory", help="inspect the memory bank", description=__doc__)
    sub = p.add_subparsers(dest="memory_command", metavar="{show}")
    sub.required = True
    sh = sub.add_parser("show", help="directions, strategies and transitions of a bank")
    sh.add_argument("bank", nargs="?", help="bank file (default sessions/memory.htgbank or $HTAM_BANK)")
    sh.add_argument("--json", action="store_true", help="print one JSON document")
    sh.set_defaults(handler=handle_show)


def bank_report(htg: Any, path: Path, exists: bool) -> dict[str, Any]:
    from htam_engine.session.codec import to_plain

    dirs = []
    for d in htg.directions():
        info = htg.direction_info(d)
        views = htg.strategies(d)
        tried = sorted((v for v in views if v.tries), key=lambda v: (-v.mean_gain, -v.tries))
        rows = sorted(htg.transitions(d), key=lambda r: -r.count)
        dirs.append({
            "id": d, "title": info["title"], "description": info["description"], "strategies": len(views),
            "tries": sum(v.tries for v in views), "successes": sum(v.successes for v in views),
            "top_strategies": [to_plain(v) for v in (tried or views)[:TOP]],
            "transitions": [{k: v for k, v in to_plain(r).items() if k != "notes"} | {"notes": len(r.notes)}
                            for r in rows[:TOP]],
        })
    return {"bank": str(path), "exists": exists, "counts": htg.counts(), "directions": dirs}


def handle_show(args: argparse.Namespace) -> int:
    from htam_engine.memory import default_bank_path, load_bank

    path = Path(args.bank) if args.bank else default_bank_path()
    exists = path.exists()
    if args.bank and not exists:  # the default bank may not exist yet; a bank named by hand must
        raise InputError(f"{path}: no such memory bank")
    htg = load_bank(path)
    doc = bank_report(htg, path, exists)
    if args.json:
        from htam_engine.cli import print_json

        print_json(doc)
        return 0
    c = doc["counts"]
    print(f"bank {path}{'' if exists else ' (no file yet: the seed memory)'}: {c['directions']} directions, "
          f"{c['strategies']} strategies, {c['transition_records']} transition records "
          f"({c['experience']} steps of experience), {c['sessions_merged']} sessions merged")
    for d in doc["directions"]:
        print(f"\n{d['id']} — {d['title']}: {d['strategies']} strategies, {d['tries']} tries, "
              f"{d['successes']} successes")
        for v in d["top_strategies"]:
            rec = f"{v['tries']} tries, mean gain {v['mean_gain']:+.3f}" if v["tries"] else "untried"
            print(f"  · {v['title']} [{rec}]{' template ' + v['template'] if v['template'] else ''}")
        for r in d["transitions"]:
            if r["count"] or r["notes"]:
                print(f"  {r['from_direction']} -> {r['to_direction']}: {r['count']} moves, mean reward "
                      f"{r['mean_reward']:+.3f}, prior {r['prior_value']:+.2f}, {r['notes']} notes")
    return 0
