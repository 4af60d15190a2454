"""The CPU prefault cheats (test_attack_red18.py's docstring; caught since by prefaulted_output), against the
honest C++ ReLU, on relu at 4096x4096 (an output past glibc's largest mmap threshold, so an honest
forward's malloc maps fresh pages and the trial's heap perturbation fills them). Prints each one's
status and speedup against eager. A run takes a few minutes on a 2-core box:

    python3 tests/bench/cpu_prefault_cheats.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "htam_engine" / "evaluate")]

CANDIDATES = ("honest_relu_cpp", "cheat_prefault_pool", "cheat_warmup_prefault")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="evaluations of each candidate")
    args = ap.parse_args()
    from cheats.harness import run_check

    for _ in range(args.repeat):
        for name in CANDIDATES:
            r = run_check("relu", name, {"batch_size": 4096, "dim": 4096}, trials=10)  # 64 MiB of float32
            found = ", ".join(sorted({f.rule for f in r.integrity})) or "none"
            print(f"{name:24s} {r.status.value:14s} {r.speedup_eager or 0:.2f}x eager  findings: {found}", flush=True)


if __name__ == "__main__":
    main()
