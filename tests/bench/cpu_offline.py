"""CPU bench for the offline proposer: C++ candidates through htam's harness.

Run from the repository root (set HTAM_KERNELBENCH to add KernelBench level 1-2 files):

    python3 tests/bench/cpu_offline.py                      # built-in suite, default settings each
    HTAM_KERNELBENCH=/work/kb/KernelBench python3 tests/bench/cpu_offline.py --kb-limit 40
    python3 tests/bench/cpu_offline.py --problems relu,softmax --moves all
    python3 tests/bench/cpu_offline.py --moves fast_math,vector_width,online_reduction

For each problem the proposer either writes a candidate ("attempted") or says why not
("unsupported", with its reason). Candidates are evaluated by the harness (compile,
correctness on fresh and unseen-shape inputs, integrity checks, timing against eager).
KernelBench files are shrunk with overrides (batch_size=16 and halving the largest
size constants until every input has at most --max-elems elements). With --moves all,
every applicable move is evaluated and a problem's best correct one counts.
Prints one line per candidate and a summary: attempted, ok, geometric-mean speedup_eager.
The baselines are timed in each evaluation, in the same rounds as the candidate.
With $OUT set (or --out) the record is written to $OUT/cpu_offline.json. One failure
never stops the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# constants that are not sizes (sizes of 8 or less are never shrunk either)
FIXED = {"kernel_size", "stride", "padding", "dilation", "groups", "num_groups"}


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def shrink_overrides(path: str, max_elems: int, device: str = "cpu") -> dict[str, Any]:
    """Overrides that make every input of a KernelBench file small enough to run quickly."""
    from htam_engine.problems import load_problem

    problem = load_problem(path, device=device)
    consts = {k: v for k, v in problem.constants.items() if isinstance(v, int) and not isinstance(v, bool)}
    overrides: dict[str, Any] = {}
    if consts.get("batch_size", 0) > 16:
        overrides["batch_size"] = 16
    for _ in range(40):
        problem = load_problem(path, overrides, device=device)
        biggest = max((math.prod(t.shape) for t in problem.inputs if t.shape), default=0)
        if biggest <= max_elems:
            return overrides
        candidates = [(v, k) for k, v in consts.items() if k not in FIXED and overrides.get(k, v) > 8]
        if not candidates:
            break
        _, name = max((overrides.get(k, v), k) for v, k in candidates)
        overrides[name] = max(8, overrides.get(name, consts[name]) // 2)
    return overrides


def kernelbench_files(levels: tuple[int, ...]) -> list[Path]:
    root = os.environ.get("HTAM_KERNELBENCH")
    if not root:
        return []
    base = Path(root)
    if (base / "KernelBench").is_dir():
        base = base / "KernelBench"
    files: list[Path] = []
    for level in levels:
        folder = base / f"level{level}"
        files += sorted(folder.glob("*.py"), key=lambda p: int(p.name.split("_")[0]) if p.name[0].isdigit() else 0)
    return files


def build_suite(args: argparse.Namespace, device: str) -> list[tuple[str, Any]]:
    """(label, Problem) pairs: the built-in suite plus (shrunk) KernelBench files."""
    from htam_engine.problems import builtin_names, load_problem

    names = args.problems.split(",") if args.problems else builtin_names()
    suite = []
    for name in names:
        try:
            suite.append((name, load_problem(name, device=device)))
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: does not load: {exc}", flush=True)
    if not args.problems:
        from htam_engine.propose.offline import Unsupported, plan_problem

        declined = 0
        for level in (1, 2):
            count = 0
            for path in kernelbench_files((level,)):
                if args.kb_limit is not None and count >= args.kb_limit:
                    break
                label = f"kb/{path.parent.name}/{path.stem}"
                try:
                    overrides = shrink_overrides(str(path), args.max_elems, device) if device == "cpu" else {}
                    problem = load_problem(str(path), overrides, device=device)
                except Exception as exc:  # noqa: BLE001
                    print(f"{label}: does not load: {exc}", flush=True)
                    continue
                if args.kb_limit is not None:  # a limited sample counts files the proposer takes on
                    try:
                        plan_problem(problem)
                    except Unsupported:
                        declined += 1
                        continue
                suite.append((label, problem))
                count += 1
        if declined:
            print(f"KernelBench sample: {declined} files before the limit were declined by the proposer", flush=True)
    return suite


def candidates_for(problem: Any, backend: str, which: str) -> tuple[list[tuple[str, str]], str | None]:
    """[(move, code)] for a problem, or ([], reason) when the proposer declines.

    which: "default" (the plan's defaults), "all" (the defaults and the first setting every
    applicable move reaches from them), or a ranked list of move ids (the first that applies)."""
    from htam_engine.families import Backend
    from htam_engine.propose.offline import DEFAULT_MOVE, MOVE_IDS, MOVES, Unsupported, generate, options
    from htam_engine.propose.offline import plan_problem, plan_space

    try:
        if which == "default":
            g = generate(problem, backend)
            return [(g.move, g.code)], None
        space = plan_space(plan_problem(problem, backend), Backend(backend))
        ranked = list(MOVE_IDS) if which == "all" else which.split(",")
        applicable = [m for m in ranked if m in MOVES and options(MOVES[m], space, space.defaults())]
        if which != "all":
            applicable = applicable[:1]
        out = [(DEFAULT_MOVE, generate(problem, backend).code)] if which == "all" else []
        seen = {code for _, code in out}
        for move in applicable:
            code = generate(problem, backend, move).code
            if code not in seen:
                seen.add(code)
                out.append((move, code))
        return (out, None) if out else ([], "no listed move applies")
    except Unsupported as exc:
        return [], str(exc)


async def evaluate_suite(suite: list[tuple[str, Any]], backend: str, device: str, which: str, workers: int,
                         config_kw: dict[str, Any]) -> list[dict[str, Any]]:
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.evaluate.pool import WorkerPool

    pool = WorkerPool(workers, device)
    rows: list[dict[str, Any]] = []
    sem = asyncio.Semaphore(workers)

    async def one(label: str, problem: Any, tid: str, code: str) -> dict[str, Any]:
        async with sem:
            t0 = time.time()
            try:
                cfg = EvalConfig(backend=backend, device=device, overrides=dict(problem.overrides), **config_kw)
                r = await pool.evaluate(problem, code, cfg)
                row = {"problem": label, "move": tid, "status": r.status.value,
                       "speedup_eager": r.speedup_eager, "speedup_compile": r.speedup_compile,
                       "runtime_ms": r.runtime_ms, "ref_runtime_ms": r.ref_runtime_ms,
                       "compile_ref_runtime_ms": r.compile_ref_runtime_ms, "message": r.diagnostics.message,
                       "wall_s": round(time.time() - t0, 1), "compile_cached": r.stages.compile_cached}
            except Exception as exc:  # noqa: BLE001 - one failure never stops the bench
                row = {"problem": label, "move": tid, "status": "bench_error",
                       "message": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-1500:]}
            speed = row.get("speedup_eager")
            sp = f"{speed:.2f}x" if isinstance(speed, float) else "-"
            print(f"{label:60s} {tid:18s} {row['status']:14s} eager {sp:>7s}  {row.get('message', '')[:80]}",
                  flush=True)
            return row

    jobs = []
    for label, problem in suite:
        cands, reason = candidates_for(problem, backend, which)
        if reason is not None:
            rows.append({"problem": label, "move": None, "status": "unsupported", "message": reason})
            print(f"{label:60s} {'-':18s} unsupported     {reason[:100]}", flush=True)
            continue
        jobs += [one(label, problem, tid, code) for tid, code in cands]
    try:
        rows += await asyncio.gather(*jobs)
    finally:
        await pool.close()
    return rows


def summarize(rows: list[dict[str, Any]], key: str = "speedup_eager") -> dict[str, Any]:
    """Per problem: attempted if a candidate was written; ok if one was correct; best speedup among ok."""
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_problem.setdefault(r["problem"], []).append(r)
    attempted = {p: rs for p, rs in by_problem.items() if any(r["status"] != "unsupported" for r in rs)}
    best: dict[str, float] = {}
    for p, rs in attempted.items():
        oks = [r[key] for r in rs if r["status"] == "ok" and r.get(key)]
        if oks:
            best[p] = max(oks)
    return {
        "problems": len(by_problem),
        "attempted": len(attempted),
        "ok": sum(1 for rs in attempted.values() if any(r["status"] == "ok" for r in rs)),
        "unsupported": sorted(p for p in by_problem if p not in attempted),
        f"geomean_{key}": geomean(list(best.values())),
        "faster_than_reference": sum(1 for v in best.values() if v > 1.0),
        "best": best,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", help="comma-separated built-in names or files (default: built-in + KernelBench)")
    ap.add_argument("--moves", default="default",
                    help="default | all | a ranked comma-separated list of move ids (first applicable wins)")
    ap.add_argument("--kb-limit", type=int, default=None,
                    help="per level, at most this many KernelBench files the proposer takes on (default: all files)")
    ap.add_argument("--max-elems", type=int, default=1 << 21, help="KernelBench inputs are shrunk to this many elements")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()

    suite = build_suite(args, "cpu")
    print(f"{len(suite)} problems", flush=True)
    t0 = time.time()
    rows = asyncio.run(evaluate_suite(suite, "cpp", "cpu", args.moves, args.workers,
                                      {"trials": args.trials, "warmup": 2, "timeout_s": 1200.0,
                                       "time_compile_baseline": False}))
    summary = summarize(rows)
    builtin = summarize([r for r in rows if not r["problem"].startswith("kb/")])
    kb = summarize([r for r in rows if r["problem"].startswith("kb/")])
    print("\n== offline proposer on the CPU (cpp) ==")
    for name, s in (("built-in", builtin), ("KernelBench", kb), ("all", summary)):
        gm = s["geomean_speedup_eager"]
        print(f"{name:12s} problems {s['problems']:3d}  attempted {s['attempted']:3d}  ok {s['ok']:3d}  "
              f"faster than eager {s['faster_than_reference']:3d}  geomean speedup_eager "
              f"{gm:.3f}x" if gm else f"{name:12s} problems {s['problems']:3d}  attempted {s['attempted']:3d}  "
              f"ok {s['ok']:3d}  geomean -")
    print(f"wall {time.time() - t0:.0f} s")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        doc = {"summary": summary, "builtin": builtin, "kernelbench": kb, "rows": rows}
        (Path(args.out) / "cpu_offline.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
