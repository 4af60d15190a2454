"""One problem's candidate under several knob settings, each measured directly, side by side.

For each named KernelBench problem (official sizes) it writes the offline proposer's candidate
at every variant's settings (the plan's defaults with those knobs set; a variant whose knobs the
problem's space lacks is skipped, said so) and measures each one as `kb_table.py --direct` does
(experiment/direct.py: the judge's comparison and tolerances on 3 input sets, then 3 + --trials
timed calls; eager and torch.compile timed once per problem). It prints the time, the speedups
and the verdict of each, so a knob's default can be chosen from measurements. On a CUDA machine:

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_probe_variants.py 1/1 2/76 --preset gemm
    python3 tests/bench/gpu_probe_variants.py 1/1 --variant '{"gemm.tile": "64x64x32"}'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_table import problem_file  # noqa: E402

TF32X3 = {"gemm.kernel": "triton", "gemm.precision": "tf32x3"}
PRESETS: dict[str, dict[str, dict]] = {
    # our GEMM against the library's, in float32 FMA and in split-float32 tensor-core products
    "gemm": {
        "defaults": {},
        "triton ieee": {"gemm.kernel": "triton"},
        "tf32x3": TF32X3,  # K-major operands: the default gemm.operands wherever tf32x3 is
        "tf32x3 strided": {**TF32X3, "gemm.operands": "strided"},  # B read in place (row-major: 0.65x on 1/1)
        "tf32x3 128x128x32 w8 s3": {**TF32X3, "gemm.tile": "128x128x32", "gemm.warps": 8, "gemm.stages": 3},
        "tf32x3 128x64x32 w4 s4": {**TF32X3, "gemm.tile": "128x64x32", "gemm.warps": 4, "gemm.stages": 4},
        "tf32x3 64x128x32 w4 s4": {**TF32X3, "gemm.tile": "64x128x32", "gemm.warps": 4, "gemm.stages": 4},
        "tf32x3 128x128x16 w8 s4": {**TF32X3, "gemm.tile": "128x128x16", "gemm.warps": 8, "gemm.stages": 4},
        "tf32x3 128x256x16 w8 s3": {**TF32X3, "gemm.tile": "128x256x16", "gemm.warps": 8, "gemm.stages": 3},
        "tf32x3 64x64x32 w4 s3": {**TF32X3, "gemm.tile": "64x64x32", "gemm.warps": 4, "gemm.stages": 3},
    },
    # a kept convolution in the problem's layout against channels-last (its tail reading the result by strides)
    "conv": {
        "defaults": {},
        "channels_last": {"conv.layout": "channels_last"},
    },
}


async def probe(picks: list[str], variants: dict[str, dict], kb: str, device: str, trials: int, workers: int) -> None:
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.experiment.direct import DirectPool
    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import Knob, Unsupported, generate

    pool = DirectPool(workers, device, compile_baseline=True)
    config = EvalConfig(backend="triton", device=device, trials=trials)
    try:
        for pick in picks:
            path = problem_file(kb, pick)
            problem = load_problem(str(path), device=device)
            jobs, names = [], []
            for name, knobs in variants.items():
                try:
                    code = generate(problem, "triton", settings={Knob(k): v for k, v in knobs.items()} or None).code
                except Unsupported as exc:
                    print(f"  {path.stem} {name}: skipped ({exc})", flush=True)
                    continue
                names.append(name)
                jobs.append(pool.evaluate(problem, code, config))
            results = await asyncio.gather(*jobs)
            eager = next((r.ref_runtime_ms for r in results if r.ref_runtime_ms), None)
            compiled = next((r.compile_ref_runtime_ms for r in results if r.compile_ref_runtime_ms), None)
            print(f"{path.stem}: eager {eager or 0:.4f} ms, torch.compile {compiled or 0:.4f} ms", flush=True)
            for name, r in zip(names, results):
                if r.ok and r.runtime_ms:
                    print(f"  {name:28s} {r.runtime_ms:9.4f} ms  x eager {r.speedup_eager or 0:5.2f}  "
                          f"x compile {r.speedup_compile or 0:5.2f}", flush=True)
                else:
                    print(f"  {name:28s} {r.status.value}: {r.diagnostics.message[:160]}", flush=True)
    finally:
        await pool.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+", help="level/number, e.g. 1/1")
    ap.add_argument("--kb", default=os.environ.get("HTAM_KERNELBENCH"))
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a named set of variants")
    ap.add_argument("--variant", action="append", default=[], help="knob settings as JSON (repeatable)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    if not args.kb:
        ap.error("set HTAM_KERNELBENCH or pass --kb")
    variants = dict(PRESETS[args.preset]) if args.preset else {"defaults": {}}
    variants.update({v: json.loads(v) for v in args.variant})
    asyncio.run(probe(args.problems, variants, args.kb, args.device, args.trials, args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
