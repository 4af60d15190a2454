"""Soak benchmark: a 500-step headless session against the loopback server.

Reports the resident size of the htam process (and of its workers) at steps 50 and 500,
the wall time, and whether anything was left in TMPDIR or running afterwards.

    python tests/bench/soak_500.py [--steps 500] [--real-every 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "faults")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--real-every", type=int, default=2, help="every Nth reply is evaluated in a worker (others: static checks)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from fault_soak import soak

    first = min(50, args.steps)
    with tempfile.TemporaryDirectory(prefix="htam-soak-") as d:
        r = soak(args.steps, Path(d), (first, args.steps), real_every=args.real_every)
    ok = (r.exit_code == 0 and r.steps_done == args.steps and r.tmp_after == r.tmp_before and not r.leftover_pids)
    if args.json:
        print(json.dumps({**asdict(r), "ok": ok}, indent=1))
    else:
        print(f"{args.steps} steps in {r.wall_s:.0f} s (exit {r.exit_code}); htam RSS "
              + ", ".join(f"step {k}: {v:.0f} MB" for k, v in sorted(r.rss_mb.items()))
              + "; workers " + ", ".join(f"step {k}: {v:.0f} MB" for k, v in sorted(r.worker_rss_mb.items()))
              + f"; TMPDIR left: {sorted(set(r.tmp_after) - set(r.tmp_before)) or 'nothing'}"
              + f"; processes left: {r.leftover_pids or 'none'}")
    if not ok:
        print(r.stderr_tail, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
