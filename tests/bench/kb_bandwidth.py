"""Achieved memory bandwidth of a KernelBench table's elementwise rows: the bytes an ideal kernel
moves (every input tensor read once, the output written once) over the measured time, for the
candidate and for eager PyTorch, from a kb_table.json (kb_table.py or kb_table_merge.py).

    python3 tests/bench/kb_bandwidth.py RUN/kb_table.json --kb $HTAM_KERNELBENCH [--copy-tbs 4.3]

The byte count comes from running the problem's own get_inputs and Model on the meta device (no
memory is allocated); --copy-tbs is the device-to-device copy bandwidth to compare against
(measured on the H200: 4.3 TB/s, counting bytes read and written).
"""

from __future__ import annotations

import argparse
import json
import re
import runpy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from htam_engine.evaluate.reference import input_bytes  # noqa: E402


def ideal_bytes(path: Path) -> int:
    """Bytes of every input tensor plus the output, shapes from the problem's own functions."""
    with torch.device("meta"):
        module = runpy.run_path(str(path))
        model = module["Model"](*module["get_init_inputs"]())
        inputs = module["get_inputs"]()
        out = model(*inputs)
    return input_bytes(inputs) + input_bytes(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", help="kb_table.json")
    ap.add_argument("--kb", required=True, help="KernelBench checkout (or its KernelBench folder)")
    ap.add_argument("--copy-tbs", type=float, default=4.3)
    ap.add_argument("--family", default="elementwise")
    args = ap.parse_args()
    base = Path(args.kb)
    base = base / "KernelBench" if (base / "KernelBench").is_dir() else base
    rows = [r for r in json.loads(Path(args.table).read_text())["rows"]
            if r.get("family") == args.family and r.get("correct") and r.get("runtime_ms")]
    print(f"| problem | x eager | candidate ms | GB moved | candidate TB/s | of copy ({args.copy_tbs} TB/s) | eager TB/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        level, stem = re.search(r"level(\d)/(.+)$", r["problem"]).groups()
        moved = ideal_bytes(base / f"level{level}" / f"{stem}.py")
        tbs = moved / r["runtime_ms"] / 1e9
        print(f"| {level}/{stem} | {r['speedup_eager']:.2f} | {r['runtime_ms']:.3f} | {moved / 1e9:.2f} | {tbs:.2f} | "
              f"{tbs / args.copy_tbs:.0%} | {moved / r['ref_runtime_ms'] / 1e9:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
