"""GPU bench for the offline proposer: Triton and CUDA candidates on the built-in suite at GPU sizes.

Run on a machine with a CUDA GPU, from the repository root:

    python3 tests/bench/gpu_offline.py                       # both backends, default settings each
    python3 tests/bench/gpu_offline.py --moves all           # every applicable move, best counts
    python3 tests/bench/gpu_offline.py --backends triton --problems relu,softmax

Per problem and backend the proposer writes a candidate (or says why it cannot); the
harness compiles it, checks correctness and integrity, and times it against eager
PyTorch and torch.compile. For elementwise problems (no reduction, no library op) the
achieved memory bandwidth (bytes of inputs + output over the kernel's median time) is
reported as a fraction of the device's copy bandwidth, measured here with a 1 GiB
device-to-device copy. Prints a line per candidate and a summary per backend (attempted,
ok, geomean speedup vs eager and vs torch.compile, bandwidth fractions). With $OUT set
(or --out) the record goes to $OUT/gpu_offline<--tag>.json. One failure never stops the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from cpu_offline import evaluate_suite, geomean, summarize  # noqa: E402


def copy_bandwidth_gbs(gib: float = 1.0, reps: int = 20) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second), in GB/s."""
    import torch

    n = int(gib * (1 << 30)) // 4
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 4 / statistics.median(times) / 1e9


def elementwise_bytes(problem: Any) -> int | None:
    """Bytes an ideal elementwise kernel moves (inputs read once, output written once), else None."""
    from htam_engine.propose.offline import Unsupported, plan_problem

    try:
        plan = plan_problem(problem)
    except Unsupported:
        return None
    if plan.has_library_op or any(r.is_row for r in plan.regions) or len(plan.regions) != 1:
        return None
    size = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
    total = sum(math.prod(t.shape) * size.get(t.dtype, 4) for t in problem.inputs if t.shape)
    for inp in plan.regions[0].inputs:  # parameters read by the kernel
        if inp.source.startswith("self."):
            total += math.prod(inp.shape) * 4
    return total + math.prod(plan.regions[0].out_shape) * 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="triton,cuda")
    ap.add_argument("--problems", help="comma-separated built-in names (default: the whole built-in suite)")
    ap.add_argument("--moves", default="default",
                    help="default | all | a ranked comma-separated list of move ids (first applicable wins)")
    ap.add_argument("--workers", type=int, default=4, help="parallel compiles (timing is serialised per GPU)")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--tag", default="", help="written as gpu_offline<tag>.json (runs side by side keep apart)")
    args = ap.parse_args()

    import torch

    from htam_engine.problems import builtin_names, load_problem

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    copy_gbs = copy_bandwidth_gbs()
    print(f"device {torch.cuda.get_device_name()}  copy bandwidth {copy_gbs:.0f} GB/s", flush=True)
    names = args.problems.split(",") if args.problems else builtin_names()
    suite = []
    for name in names:
        try:
            suite.append((name, load_problem(name, device="cuda")))
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: does not load: {exc}", flush=True)
    bytes_of = {label: elementwise_bytes(p) for label, p in suite}
    record: dict[str, Any] = {"device": torch.cuda.get_device_name(), "copy_gbs": copy_gbs, "backends": {}}
    t0 = time.time()
    for backend in args.backends.split(","):
        print(f"\n== {backend} ==", flush=True)
        rows = asyncio.run(evaluate_suite(suite, backend, "cuda", args.moves, args.workers,
                                          {"trials": args.trials, "warmup": 5, "timeout_s": 1200.0,
                                           "time_compile_baseline": True}))
        bandwidth = {}
        for r in rows:
            nbytes = bytes_of.get(r["problem"])
            if r["status"] == "ok" and nbytes and r.get("runtime_ms"):
                gbs = nbytes / (r["runtime_ms"] / 1e3) / 1e9
                r["achieved_gbs"], r["copy_fraction"] = gbs, gbs / copy_gbs
                bandwidth[r["problem"]] = max(bandwidth.get(r["problem"], 0.0), gbs / copy_gbs)
        s_eager, s_compile = summarize(rows), summarize(rows, "speedup_compile")
        summary = {
            "attempted": s_eager["attempted"], "ok": s_eager["ok"], "problems": s_eager["problems"],
            "unsupported": s_eager["unsupported"],
            "geomean_speedup_eager": s_eager["geomean_speedup_eager"],
            "geomean_speedup_compile": s_compile["geomean_speedup_compile"],
            "faster_than_eager": s_eager["faster_than_reference"],
            "faster_than_compile": s_compile["faster_than_reference"],
            "elementwise_copy_fraction": bandwidth,
            "elementwise_copy_fraction_geomean": geomean(list(bandwidth.values())),
        }
        record["backends"][backend] = {"summary": summary, "rows": rows}
        ge, gc = summary["geomean_speedup_eager"], summary["geomean_speedup_compile"]
        print(f"{backend}: problems {summary['problems']}  attempted {summary['attempted']}  ok {summary['ok']}  "
              f"geomean vs eager {ge and f'{ge:.3f}x'}  vs torch.compile {gc and f'{gc:.3f}x'}  "
              f"faster than eager {summary['faster_than_eager']}  than compile {summary['faster_than_compile']}")
        for name, frac in sorted(bandwidth.items()):
            print(f"  {name:28s} {frac * 100:5.1f}% of copy bandwidth")
    print(f"wall {time.time() - t0:.0f} s")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"gpu_offline{args.tag}.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
