"""Run the fault suite and print its figures as a Markdown table (for the README).

Runs `pytest tests/faults` with HTAM_FAULT_FIGURES pointing at a JSON file the suite fills
(cases tried per fault kind, cases survived, data lost, worst time from a crashed worker to
the next good result), optionally adds the 500-step soak (tests/bench/soak_500.py), prints
the table and writes it to tests/faults/FIGURES.md.

    python tests/bench/fault_figures.py [--soak] [--out FILE] [-- extra pytest args]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "faults")]


def run_suite(extra: list[str]) -> tuple[int, list[dict], float]:
    with tempfile.TemporaryDirectory(prefix="htam-figures-") as d:
        out = Path(d) / "figures.json"
        env = {**os.environ, "HTAM_FAULT_FIGURES": str(out), "HTAM_FAULT_FULL": "1", "PYTHONPATH": str(ROOT)}
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "tests/faults", "-q", "-p", "no:cacheprovider", *extra],
                              cwd=ROOT, env=env)
        wall = time.monotonic() - t0
        rows = json.loads(out.read_text()) if out.exists() else []
    return proc.returncode, rows, wall


def soak_row(steps: int = 500) -> dict:
    from fault_soak import soak

    with tempfile.TemporaryDirectory(prefix="htam-soak-") as d:
        r = soak(steps, Path(d), (50, steps), real_every=2)
    ok = r.exit_code == 0 and r.steps_done == steps and r.tmp_after == r.tmp_before and not r.leftover_pids
    note = (f"{steps} steps in {r.wall_s:.0f} s; htam RSS {r.rss_mb.get(50, 0):.0f} MB at step 50, "
            f"{r.rss_mb.get(steps, 0):.0f} MB at step {steps}; nothing left in TMPDIR"
            if ok else f"failed: exit {r.exit_code}, {r.steps_done} steps")
    return {"kind": f"{steps}-step session (memory, temp files)", "tried": 1, "survived": int(ok), "lost": 0,
            "recover_s": None, "notes": [note]}


def table(rows: list[dict]) -> str:
    lines = ["| fault kind | cases tried | survived | data lost | worst recovery from a crashed worker | notes |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        rec = f"{r['recover_s']:.1f} s" if r.get("recover_s") is not None else "—"
        lines.append(f"| {r['kind']} | {r['tried']:,} | {r['survived']:,} | {r['lost']} | {rec} | "
                     f"{'; '.join(r.get('notes') or []).replace('|', '/')} |")
    total = sum(r["tried"] for r in rows)
    survived = sum(r["survived"] for r in rows)
    lost = sum(r["lost"] for r in rows)
    worst = max((r["recover_s"] for r in rows if r.get("recover_s") is not None), default=None)
    lines.append(f"| **all** | **{total:,}** | **{survived:,}** | **{lost}** | "
                 f"**{'—' if worst is None else f'{worst:.1f} s'}** | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--soak", action="store_true", help="also run the 500-step soak (a few minutes)")
    ap.add_argument("--out", default=str(ROOT / "tests" / "faults" / "FIGURES.md"))
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    code, rows, wall = run_suite(extra)
    if args.soak:
        rows.append(soak_row())
    md = (f"Fault suite figures (`python tests/bench/fault_figures.py{' --soak' if args.soak else ''}`; "
          f"{platform.machine()}, {os.cpu_count()} cores, CPU only; suite {'passed' if code == 0 else 'FAILED'} "
          f"in {wall:.0f} s):\n\n" + table(rows) + "\n")
    print(md)
    Path(args.out).write_text(md)
    return code


if __name__ == "__main__":
    sys.exit(main())
