"""Where a fresh worker's first check spends its time on a GPU.

In the throughput bench a fresh worker's first check took seconds where a reused worker's
took a fraction of one, and on a GPU those seconds hold a check slot. This evaluates offline
CUDA candidates in an order that tells a per-process cost from a per-problem one:

    problem A, problem B, problem A again (another template or a second copy), problem C

twice: first through a real judge process (a pool of one: its stage times), then with a judge
(Judge) in this process,
on one CPU thread as a judge has, each evaluation's checks profiled on their own (it builds
each candidate again, under its own key). The candidate's own calls run in its sandbox, so the
profile shows the judge's side: loading, the reference, comparisons and waiting on the sandbox. CUDA_LAUNCH_BLOCKING=1 charges time to the call that
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
import time
from pathlib import Path

os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def config(problem):
    from htam_engine.evaluate.config import EvalConfig

    return EvalConfig(backend="cuda", device="cuda", timeout_s=900.0, time_compile_baseline=False,
                      overrides=dict(problem.overrides))


def show(stats: pstats.Stats | cProfile.Profile | str, key: str, n: int) -> None:
    buf = io.StringIO()
    try:
        pstats.Stats(stats, stream=buf).sort_stats(key).print_stats(n)
    except TypeError:  # a profile that never ran: the candidate failed before its check
        print("(no check ran)")
        return
    print(buf.getvalue()[-16000:])


def stage_line(r, label: str, wall: float) -> str:
    s = r.stages
    return (f"{label} {r.status.value}  compile {s.compile_s:.2f}  check {s.check_s:.2f}  time {s.time_s:.2f}  "
            f"wall {wall:.2f}  {r.diagnostics.message or ''}")


def pick_order(wanted: list[str]) -> list:
    """A, B, A again (its next template when it has one), then the rest."""
    from gpu_batch import offline_candidates

    by_problem: dict[str, list] = {}
    for c in asyncio.run(offline_candidates(10_000)):
        by_problem.setdefault(c[0].id.split(":", 1)[-1], []).append(c)
    first, second, *rest = wanted
    again = by_problem[first][1] if len(by_problem[first]) > 1 else by_problem[first][0]
    return [by_problem[first][0], by_problem[second][0], again] + [by_problem[p][0] for p in rest]


async def evaluate_in_worker(order: list) -> None:
    from htam_engine.evaluate.pool import WorkerPool

    pool = WorkerPool(1, "cuda")
    try:
        for problem, code, tid in order:
            t = time.perf_counter()
            r = await pool.evaluate(problem, code, config(problem))
            print(stage_line(r, f"worker: {problem.id} [{tid}]", time.perf_counter() - t))
    finally:
        await pool.close()


def through_worker(order: list, top: int) -> None:
    """A real judge process: the stage times a pool sees."""
    print("== through a judge process")
    asyncio.run(evaluate_in_worker(order))


def in_process(order: list, top: int) -> None:
    """A judge in this process, each evaluation's checks profiled on their own."""
    import torch

    from htam_engine.evaluate import judge as judge_mod
    from htam_engine.evaluate.process import worker_env

    print("== in this process, one CPU thread")
    torch.set_num_threads(1)
    print("CUDA_MODULE_LOADING", os.environ.get("CUDA_MODULE_LOADING", "(unset: lazy)"), "torch", torch.__version__)
    t = time.perf_counter()
    judge = judge_mod.Judge("cuda", lambda msg: None, env=worker_env("cuda"))
    print(f"judge start (context, warm-up, zygote, a spare sandbox): {time.perf_counter() - t:.2f} s")
    check = judge_mod.Evaluation._check
    try:
        for i, (problem, code, tid) in enumerate(order):
            prof = cProfile.Profile()
            judge_mod.Evaluation._check = lambda self, *a, **kw: prof.runcall(check, self, *a, **kw)
            t = time.perf_counter()
            r, _ = judge.evaluate(problem, code, config(problem), "cuda", f"first{i}", 0.0)
            print("\n" + stage_line(r, f"== {i}: {problem.id} [{tid}]", time.perf_counter() - t))
            show(prof, "cumulative", top)
            show(prof, "tottime", 12)
    finally:
        judge_mod.Evaluation._check = check
        judge.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="add_broadcast,layernorm,relu")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return
    from gpu_batch import fresh_cache

    fresh_cache("first-check")
    order = pick_order([p.strip() for p in args.problems.split(",") if p.strip()])
    through_worker(order, args.top)
    in_process(order, args.top)


if __name__ == "__main__":
    main()
