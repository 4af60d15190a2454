"""Where a fresh worker's first check spends its time on a GPU.

In the throughput bench a fresh worker's first check took seconds where a reused worker's
took a fraction of one, and on a GPU those seconds hold a check slot. This evaluates offline
CUDA candidates in an order that tells a per-process cost from a per-problem one:

    problem A, problem B, problem A again (another template or a second copy), problem C

twice: first through a real worker process (a pool of one, the worker wrapped by
profiled_worker.py so the whole worker is profiled), then with htam's worker pipeline (Runner)
in this process, on one CPU thread as a worker has, each check profiled on its own (it builds
each candidate again, under its own key). CUDA_LAUNCH_BLOCKING=1 charges time to the call that
launched the work rather than to the next synchronisation. A cost the worker pays and this
process does not is one this process took earlier (an import, say).

    python3 tests/bench/gpu_first_check.py [--problems add_broadcast,layernorm,relu] [--top 25]

Prints each candidate's stage times and the top functions of each check by cumulative time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


async def through_worker(order: list) -> None:
    import dataclasses

    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.evaluate.pool import WorkerPool

    pool = WorkerPool(1, "cuda")
    cfg = EvalConfig(backend="cuda", device="cuda", timeout_s=900.0, time_compile_baseline=False)
    try:
        for problem, code, tid in order:
            t = time.perf_counter()
            r = await pool.evaluate(problem, code, dataclasses.replace(cfg, overrides=dict(problem.overrides)))
            s = r.stages
            print(f"worker: {problem.id} [{tid}] {r.status.value}  compile {s.compile_s:.2f}  check {s.check_s:.2f}  "
                  f"time {s.time_s:.2f}  wall {time.perf_counter() - t:.2f}")
    finally:
        await pool.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="add_broadcast,layernorm,relu")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return
    os.environ["HTAM_CACHE_DIR"] = tempfile.mkdtemp(prefix="htam-first-check-")
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(os.environ["HTAM_CACHE_DIR"], "torch_extensions")
    from gpu_batch import offline_candidates

    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.evaluate.runner import Runner

    wanted = [p.strip() for p in args.problems.split(",") if p.strip()]
    found = asyncio.run(offline_candidates(10_000))
    by_problem: dict[str, list] = {}
    for c in found:
        by_problem.setdefault(c[0].id.split(":", 1)[-1], []).append(c)
    first, second, *rest = wanted
    order = [by_problem[first][0], by_problem[second][0]]
    again = by_problem[first][1] if len(by_problem[first]) > 1 else by_problem[first][0]
    order += [again] + [by_problem[p][0] for p in rest]

    here = Path(__file__).resolve().parent
    print("== through a worker process")
    prof_dir = tempfile.mkdtemp(prefix="htam-worker-prof-")
    os.environ["HTAM_WORKER_WRAPPER"] = f"{sys.executable} {here / 'profiled_worker.py'}"
    os.environ["HTAM_PROFILE_OUT"] = prof_dir
    asyncio.run(through_worker(order))
    os.environ.pop("HTAM_WORKER_WRAPPER")
    for f in sorted(Path(prof_dir).glob("*.prof")):
        for key, n in (("cumulative", args.top + 50), ("tottime", 30)):
            buf = io.StringIO()
            pstats.Stats(str(f), stream=buf).sort_stats(key).print_stats(n)
            print(buf.getvalue()[-16000:])

    print("== in this process, one CPU thread")
    torch.set_num_threads(1)
    print("CUDA_MODULE_LOADING", os.environ.get("CUDA_MODULE_LOADING", "(unset: lazy)"), "torch", torch.__version__)
    t = time.perf_counter()
    runner = Runner("cuda", lambda msg: None)
    print(f"worker start (context, warm-up, guards): {time.perf_counter() - t:.2f} s")
    cfg = EvalConfig(backend="cuda", device="cuda", timeout_s=900.0, time_compile_baseline=False)
    for i, (problem, code, tid) in enumerate(order):
        key = f"first{i}"
        prof = cProfile.Profile()
        original = runner._check

        def profiled(*a, _orig=original, **kw):
            prof.enable()
            try:
                return _orig(*a, **kw)
            finally:
                prof.disable()

        runner._check = profiled
        import dataclasses

        r, _ = runner.evaluate(problem, code, dataclasses.replace(cfg, overrides=dict(problem.overrides)), "cuda", key)
        runner._check = original
        s = r.stages
        print(f"\n== {i}: {problem.id} [{tid}] {r.status.value}  compile {s.compile_s:.2f}  check {s.check_s:.2f}  "
              f"time {s.time_s:.2f}  total {s.total_s:.2f}  {r.diagnostics.message or ''}")
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.top)
        print(buf.getvalue()[-6000:])
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        print(buf.getvalue()[-3000:])


if __name__ == "__main__":
    main()
