"""How each side's figures move between two `htam verify` runs of the same exports on the same kind
of GPU: htam's kernel and eager times against KernelBench's, row by row. A gap between htam and
KernelBench is read against this: a side whose own figure moves more than 3 % between runs cannot
be agreed with to 3 %.

    python3 tests/bench/verify_runs.py tests/bench/data/verify_h100_d1465e1.json tests/bench/data/verify_h100_07fa654.txt

Each file is gpu_verify.py's JSON or its printed table (what came back where a part's timeout cut the
JSON off). Prints per common problem: htam's and KernelBench's kernel and eager ms in each run and the
change, and both gaps; then the largest change of each side's figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(path: Path) -> dict[str, dict[str, float]]:
    """problem -> htam and KernelBench ms (kernel, eager) and the gap in %."""
    if path.suffix == ".json":
        return {r["problem"]: {"htam": r["htam"]["runtime_ms"], "htam_ref": r["htam"]["ref_runtime_ms"],
                               "kb": r["kernelbench"]["runtime_ms"], "kb_ref": r["kernelbench"]["ref_runtime_ms"],
                               "gap": 100 * r["speedup_gap"]}
                for r in json.loads(path.read_text())["alone"] if r["speedup_gap"] is not None}
    found = {}
    for line in path.read_text().splitlines():  # problem | batch x | htam | ms | ref ms | x | KB | ms | ref ms | x | gap
        cells = [c.strip() for c in line.split("|")]
        if line.startswith("kernelbench:") and len(cells) == 11 and cells[2] == "ok" and cells[6] == "correct":
            found[cells[0]] = {"htam": float(cells[3]), "htam_ref": float(cells[4]), "kb": float(cells[7]),
                               "kb_ref": float(cells[8]), "gap": float(cells[10].split("%")[0])}
    return found


def change(a: float, b: float) -> float:
    return 100 * (b - a) / a


def main() -> int:
    first, second = (rows(Path(p)) for p in sys.argv[1:3])
    common = [p for p in first if p in second]
    if not common:
        sys.exit("verify_runs: the two runs have no verified problem in common")
    sides = {"htam": ("htam", "htam_ref"), "KernelBench": ("kb", "kb_ref")}
    print("problem | htam kernel ms | KernelBench kernel ms | htam eager ms | KernelBench eager ms | gap")
    for p in common:
        a, b = first[p], second[p]
        cells = [f"{a[k]:.4g} -> {b[k]:.4g} ({change(a[k], b[k]):+.1f} %)" for k in ("htam", "kb", "htam_ref", "kb_ref")]
        print(" | ".join([p.split(":")[-1], *cells, f"{a['gap']:+.1f} % -> {b['gap']:+.1f} %"]))
    for side, keys in sides.items():
        worst = max((abs(change(first[p][k], second[p][k])), p, k) for p in common for k in keys)
        within = sum(all(abs(change(first[p][k], second[p][k])) <= 3 for k in keys) for p in common)
        print(f"{side}: both figures within 3 % of the other run on {within} of {len(common)} problems; "
              f"largest change {worst[0]:.1f} % ({worst[1].split(':')[-1]}, {'eager' if worst[2].endswith('ref') else 'kernel'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
