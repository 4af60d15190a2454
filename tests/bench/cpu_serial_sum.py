"""KernelBench's 47_Sum_reduction_over_a_dimension at its official output count, on the CPU: how many
outputs of a serial float32 column sum (the offline proposer's column kernel: one accumulator per
output, 4096 rows one after another) the judge's comparison turns down on its signed-normal set,
and whether bfloat16 rounding is still caught. The official input (128 x 4096 x 4095) is taken in
16 slices of 8 x 4096 x 4095 (537 MB each). Prints a line per slice that fails, then the counts:

    python3 tests/bench/cpu_serial_sum.py [--slices 16]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from htam_engine.evaluate.checks.compare import compare_outputs  # noqa: E402
from htam_engine.evaluate.config import DEFAULT_TOLERANCES  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=16)
    a = ap.parse_args()
    tol = dict(DEFAULT_TOLERANCES)
    failing = low_caught = 0
    for k in range(a.slices):
        x = torch.randn(8, 4096, 4095, generator=torch.Generator().manual_seed(k))
        ref, exact = x.sum(1, keepdim=True), x.double().sum(1, keepdim=True)
        acc = torch.zeros(8, 4095)
        for r in range(x.shape[1]):
            acc += x[:, r, :]
        m = compare_outputs(acc.unsqueeze(1), ref, tol, "signed-normal", exact=exact)
        if m is not None:
            failing += 1
            print(f"  slice {k}: {m.note} (max abs error {m.max_abs_error:.3g})", flush=True)
        low_caught += compare_outputs(ref.bfloat16().float(), ref, tol, "signed-normal", exact=exact) is not None
    print(f"serial float32 sum turned down in {failing} of {a.slices} slices; bfloat16 rounding caught in "
          f"{low_caught} of {a.slices}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
