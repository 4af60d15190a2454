"""GPU harness bench: honest CUDA and Triton candidates on built-in problems, timed through htam's harness.

Run on a machine with a CUDA GPU (from the repository root):

    python3 tests/bench/gpu_harness.py                  # 5 problems x {cuda, triton}, 5 runs each
    python3 tests/bench/gpu_harness.py --runs 3 --problems relu,softmax --backends triton

What it does, per candidate (tests/bench/gpu_candidates/<problem>_<backend>.py):
  run 1   evaluated with a cold compile cache (a fresh cache folder for this bench), and with the
          torch.compile baseline; the first runs of all candidates go through a worker pool so
          compiles overlap (timing is still one candidate at a time per GPU);
  run 2.. the same source again: compile served from the cache, the eager reference re-timed
          each run (its cached baseline is dropped), so the spread of speedup_eager reflects the
          noise of both timings.
It prints one line per run (status, compile/check/time wall seconds, runtimes, speedups) and a summary
per candidate: cold wall time by stage, and min / median / max and relative spread of speedup_eager.
A failing candidate is reported and the bench goes on. With $OUT set (or --out), the full record is
written as JSON to $OUT/gpu_harness-<backends>.json. --budget-s (default 540) stops starting new
runs once that much wall time has passed, so a time-limited session still gets its JSON; to stay
well inside a 10-minute limit, run one backend per command (--backends cuda, then --backends triton).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CANDIDATES = Path(__file__).resolve().parent / "gpu_candidates"
DEFAULT_PROBLEMS = ["relu", "softmax", "rmsnorm", "affine_gelu_scale", "scale_bias_sigmoid_mul"]


def _parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS), help="comma-separated built-in names")
    p.add_argument("--backends", default="cuda,triton")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--workers", type=int, default=4, help="pool size for the cold first runs")
    p.add_argument("--device", default="cuda")
    p.add_argument("--cache", default=None, help="compile cache folder (default: a fresh temporary one)")
    p.add_argument("--out", default=os.environ.get("OUT"), help="folder for the JSON record (default $OUT)")
    p.add_argument("--budget-s", type=float, default=540.0, help="start no new run after this many seconds")
    return p.parse_args()


def _row(r) -> dict:
    s = r.stages
    return {
        "status": r.status.value,
        "message": r.diagnostics.message,
        "runtime_ms": r.runtime_ms,
        "ref_runtime_ms": r.ref_runtime_ms,
        "compile_ref_runtime_ms": r.compile_ref_runtime_ms,
        "speedup_eager": r.speedup_eager,
        "speedup_compile": r.speedup_compile,
        "compile_s": s.compile_s,
        "compile_cached": s.compile_cached,
        "check_s": s.check_s,
        "time_s": s.time_s,
        "total_s": s.total_s,
        "trials": len(r.timings),
        "integrity": [f"{f.rule}: {f.message}" for f in r.integrity],
    }


def _fmt(x, unit="", nd=4) -> str:
    return "-" if x is None else f"{x:.{nd}g}{unit}"


def _print_run(name: str, run: int, row: dict) -> None:
    cached = "c" if row["compile_cached"] else " "
    print(f"{name:38s} run {run}  {row['status']:13s} compile {row['compile_s']:7.2f}s{cached} "
          f"check {row['check_s']:6.2f}s time {row['time_s']:6.2f}s | cand {_fmt(row['runtime_ms'], 'ms')} "
          f"eager {_fmt(row['ref_runtime_ms'], 'ms')} compile {_fmt(row['compile_ref_runtime_ms'], 'ms')} | "
          f"x_eager {_fmt(row['speedup_eager'])} x_compile {_fmt(row['speedup_compile'])}", flush=True)
    if row["status"] != "ok":
        print(f"{'':38s}        -> {row['message']}", flush=True)


def _summary(name: str, rows: list[dict]) -> dict:
    ok = [r["speedup_eager"] for r in rows if r["status"] == "ok" and r["speedup_eager"]]
    first = rows[0] if rows else {}
    out = {
        "candidate": name,
        "runs": len(rows),
        "ok_runs": len(ok),
        "cold_compile_s": first.get("compile_s"),
        "cold_check_s": first.get("check_s"),
        "cold_time_s": first.get("time_s"),
        "cold_total_s": first.get("total_s"),
        "cached_compile_s": statistics.median([r["compile_s"] for r in rows[1:]]) if len(rows) > 1 else None,
        "speedup_compile": first.get("speedup_compile"),
    }
    if ok:
        med = statistics.median(ok)
        out.update(speedup_eager_min=min(ok), speedup_eager_median=med, speedup_eager_max=max(ok),
                   speedup_eager_spread=(max(ok) - min(ok)) / med if med else None)
    return out


async def _cold_runs(jobs, args, make_config) -> dict[str, dict]:
    from htam_engine.evaluate.pool import WorkerPool

    results: dict[str, dict] = {}
    async with WorkerPool(size=max(1, min(args.workers, len(jobs))), device=args.device) as pool:

        async def one(name, problem, code):
            t0 = time.perf_counter()
            try:
                r = await pool.evaluate(problem, code, make_config(True))
                row = _row(r)
            except Exception as exc:  # noqa: BLE001 - the bench reports and goes on
                row = {"status": "bench_error", "message": f"{type(exc).__name__}: {exc}", "compile_s": 0.0,
                       "compile_cached": False, "check_s": 0.0, "time_s": 0.0, "total_s": 0.0, "runtime_ms": None,
                       "ref_runtime_ms": None, "compile_ref_runtime_ms": None, "speedup_eager": None,
                       "speedup_compile": None, "trials": 0, "integrity": []}
            row["wall_s"] = time.perf_counter() - t0
            results[name] = row
            _print_run(name, 1, row)

        await asyncio.gather(*(one(n, p, c) for n, p, c in jobs))
    return results


def main() -> int:
    args = _parse_args()
    if not args.cache:
        args.cache = tempfile.mkdtemp(prefix="htam-gpu-bench-")
    os.environ["HTAM_CACHE_DIR"] = args.cache
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path(args.cache) / "torch_extensions"))

    import torch

    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.evaluate.evaluator import Evaluator
    from htam_engine.problems import load_problem

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_harness: no CUDA GPU visible; this bench needs one", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(f"gpu_harness: {gpu}, torch {torch.__version__}, cache {args.cache}, {args.runs} runs, "
          f"{args.trials} trials", flush=True)

    def make_config(with_compile: bool) -> EvalConfig:
        return EvalConfig(device=args.device, timeout_s=args.timeout, trials=args.trials, warmup=args.warmup,
                          time_compile_baseline=with_compile)

    jobs = []
    record: dict = {"device": gpu, "torch": torch.__version__, "runs": args.runs, "trials": args.trials,
                    "candidates": {}, "summary": [], "errors": {}}
    for prob in [p for p in args.problems.split(",") if p]:
        for backend in [b for b in args.backends.split(",") if b]:
            name = f"{prob}_{backend}"
            path = CANDIDATES / f"{name}.py"
            try:
                problem = load_problem(prob, device=args.device)
                jobs.append((name, problem, path.read_text()))
            except Exception as exc:  # noqa: BLE001
                record["errors"][name] = f"{type(exc).__name__}: {exc}"
                print(f"{name:38s} SKIPPED: {exc}", flush=True)

    t_all = time.perf_counter()
    cold = asyncio.run(_cold_runs(jobs, args, make_config))
    ev = Evaluator(args.device)
    try:
        for name, problem, code in jobs:
            rows = [cold[name]]
            for run in range(2, args.runs + 1):
                if time.perf_counter() - t_all > args.budget_s:
                    record["errors"][name] = f"runs {run}..{args.runs} skipped: --budget-s {args.budget_s:g} spent"
                    print(f"{name:38s} run {run}  skipped (time budget spent)", flush=True)
                    break
                try:
                    row = _row(ev.evaluate(problem, code, make_config(False)))
                except Exception:  # noqa: BLE001 - the bench reports and goes on
                    row = {"status": "bench_error", "message": traceback.format_exc(limit=3)}
                    print(f"{name:38s} run {run}  bench error: {row['message']}", flush=True)
                    rows.append(row)
                    continue
                rows.append(row)
                _print_run(name, run, row)
            record["candidates"][name] = rows
            record["summary"].append(_summary(name, [r for r in rows if "compile_s" in r]))
    finally:
        ev.close()
    record["wall_s"] = time.perf_counter() - t_all

    print("\nsummary (cold = first evaluation with an empty compile cache; spread = (max-min)/median of speedup_eager)")
    print(f"{'candidate':38s} ok  cold compile/check/time s   cached compile s   x_eager min/med/max   spread   x_compile")
    for s in record["summary"]:
        print(f"{s['candidate']:38s} {s['ok_runs']}/{s['runs']}  "
              f"{_fmt(s['cold_compile_s'], nd=3):>7s}/{_fmt(s['cold_check_s'], nd=3):>5s}/{_fmt(s['cold_time_s'], nd=3):>5s}"
              f"   {_fmt(s['cached_compile_s'], nd=3):>8s}        "
              f"{_fmt(s.get('speedup_eager_min'), nd=3)}/{_fmt(s.get('speedup_eager_median'), nd=3)}/"
              f"{_fmt(s.get('speedup_eager_max'), nd=3)}   {_fmt(s.get('speedup_eager_spread'), nd=2)}   "
              f"{_fmt(s['speedup_compile'], nd=3)}")
    print(f"total wall {record['wall_s']:.1f}s")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"gpu_harness-{args.backends.replace(',', '+')}.json"
        path.write_text(json.dumps(record, indent=1, default=str))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
