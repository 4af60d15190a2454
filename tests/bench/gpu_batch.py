"""GPU benchmark of the loop: a batch over the built-in suite, evaluation throughput, compile time.

Run on a CUDA machine (the lead runs it on the H200):

    python3 tests/bench/gpu_batch.py [--parts batch,throughput,compile] [--steps 2] [--jobs 16]
                                     [--parallel 32] [--sequential 6] [--workers 16] [--backend triton]

Parts (each robust to single failures; results are written after every part):

batch       `htam batch builtin --device cuda --backend cuda` with the offline proposer at GPU
            sizes (problems in flight: --jobs); its metrics (correctness, fast_p, geomean vs
            eager and torch.compile).
throughput  distinct CUDA load_inline (or --backend triton) candidates (the offline proposer's candidates for every
            built-in problem x move) evaluated (compile, check, time) with the parallel
            pool (--workers slots) and, in the same run, a subset of the same candidates one at
            a time through a single worker; candidates per minute for each, and the per-stage
            times. Each mode uses its own fresh compile cache, so neither reuses the other's builds;
            the torch.compile baseline (per problem, not per candidate) is left out of both.
compile     the per-candidate compile time before and after cutting it, on one typical CUDA
            candidate compiled under distinct names (nothing cached): the usual layout (torch
            headers in the .cu), the same with a shared precompiled torch/extension.h for the
            host translation unit, and the split layout (kernel .cu with only CUDA headers,
            `no_implicit_headers`, torch wrapper in the host unit with the precompiled header).

Writes JSON to $OUT/gpu_batch.json when OUT is set (else ./gpu_batch.json), adding to what an
earlier invocation wrote there, and prints a summary. Each part takes several minutes on a 16-core
box (a CUDA load_inline compile is ~70 s); to stay under a 10-minute command limit run one part
per invocation:  --parts compile,  --parts throughput,  --parts batch --steps 1.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OUT = Path(os.environ.get("OUT") or ".")
REPORT: dict[str, Any] = {}
# Where the throughput part evaluates: cuda candidates on a GPU; --device cpu runs the same
# part end to end on a machine without one (cpp candidates at CPU sizes, a check of the script).
TARGET = {"device": "cuda", "backend": "cuda"}


def load_previous() -> None:
    """Parts run by separate invocations accumulate in one file."""
    try:
        REPORT.update(json.loads((OUT / "gpu_batch.json").read_text()))
    except (OSError, ValueError):
        pass


def save() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "gpu_batch.json").write_text(json.dumps(REPORT, indent=2, default=str))


def part(name: str):
    """Run one part; a failure is recorded and the next part still runs."""

    def wrap(fn):
        def run(*a, **kw):
            t0 = time.time()
            try:
                REPORT[name] = fn(*a, **kw)
            except Exception as exc:  # noqa: BLE001 - a bench keeps going
                REPORT[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}
            REPORT[name]["wall_s"] = round(time.time() - t0, 1)
            save()
            print(f"== {name}: {json.dumps(REPORT[name], default=str)[:1500]}", flush=True)

        return run

    return wrap


def fresh_cache(tag: str) -> str:
    d = tempfile.mkdtemp(prefix=f"htam-bench-{tag}-")
    os.environ["HTAM_CACHE_DIR"] = d
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(d, "torch_extensions")
    return d


# ---------------------------------------------------------------------------- batch
@part("batch")
def run_batch(args: argparse.Namespace) -> dict[str, Any]:
    from htam_engine.loop.batch import Batch, BatchSpec
    from htam_engine.loop.suite import load_suite

    fresh_cache("batch")
    out = OUT / "batch"
    spec = BatchSpec(suites=["builtin"], out=str(out), steps=args.steps, samples=1, device="cuda", backend="cuda",
                     proposer="offline", jobs=args.jobs, workers=args.workers)
    suite = load_suite(spec.suites, device="cuda")
    done_lines: list[str] = []

    def on_done(d: Any) -> None:
        line = f"[{d.index}/{d.total}] {d.problem}: " + (d.error or f"{d.row['status']} {d.row['speedup_eager']}")
        done_lines.append(line)
        print(line, flush=True)

    batch = Batch(spec)

    async def bounded() -> dict[str, Any]:
        try:
            return await asyncio.wait_for(batch.run(suite.problems, on_done=on_done), args.batch_deadline)
        except asyncio.TimeoutError:
            # what finished is on disk as session files: report it, with the rest listed as unfinished
            return batch.write_results(suite.problems)

    doc = asyncio.run(bounded())
    return {"metrics": doc["metrics"], "problems": len(suite.problems), "unfinished": doc["unfinished"],
            "broken": [str(b) for b in suite.broken], "out": str(out), "lines": done_lines}


# ---------------------------------------------------------------------------- throughput
async def offline_candidates(limit: int) -> list[tuple[Any, str, str]]:
    """(problem, code, move) for distinct sources of the offline proposer (TARGET's backend)."""
    from htam_engine.families import Backend
    from htam_engine.memory import make_state
    from htam_engine.memory.types import Retrieval, Selection, StrategyView
    from htam_engine.problems import builtin_names, load_problem
    from htam_engine.propose.base import ProposalRequest
    from htam_engine.propose.offline import MOVE_IDS, OfflineProposer

    proposer = OfflineProposer()
    seen: set[str] = set()
    out: list[tuple[Any, str, str]] = []
    for name in builtin_names():
        try:
            problem = load_problem(name, device=TARGET["device"])
        except Exception:  # noqa: BLE001
            continue
        backend = Backend(TARGET["backend"])
        state = make_state("start", problem.family, backend, "unknown", None)
        for tid in MOVE_IDS:  # a retrieval naming one move steers the proposer to it
            hint = StrategyView(id=f"bench-{tid}", direction="", title=tid, description="", template=tid)
            req = ProposalRequest(problem=problem, backend=backend, state=state,
                                  selection=Selection("", [], "bench"), retrieval=Retrieval("", [hint], []))
            try:
                prop = await proposer.propose(req)
            except Exception:  # noqa: BLE001 - a generator fault loses this candidate only
                continue
            if prop.code and prop.code not in seen:
                seen.add(prop.code)
                out.append((problem, prop.code, prop.template or ""))
    # round-robin over problems, so the one-at-a-time prefix covers many of them
    by_problem: dict[str, list[tuple[Any, str, str]]] = {}
    for c in out:
        by_problem.setdefault(c[0].id, []).append(c)
    mixed: list[tuple[Any, str, str]] = []
    while any(by_problem.values()):
        for queue in by_problem.values():
            if queue:
                mixed.append(queue.pop(0))
    return mixed[:limit]


def stage_row(r: Any, wall: float) -> dict[str, Any]:
    st = r.stages
    return {"status": r.status.value, "wall_s": round(wall, 2), "compile_s": round(st.compile_s, 2),
            "check_s": round(st.check_s, 2), "first_call_s": round(st.first_call_s, 2),
            "baseline_s": round(st.baseline_s, 2), "time_s": round(st.time_s, 2), "total_s": round(st.total_s, 2),
            "lock_wait_s": round(st.lock_wait_s, 2), "device_alone_s": round(st.device_alone_s, 2),
            "cached": st.compile_cached, "speedup_eager": r.speedup_eager,
            # the judge's own peak: what its tensors held, and what its allocator kept from the device
            "judge_allocated_gib": st.gpu_peak_allocated_gib, "judge_reserved_gib": st.gpu_peak_reserved_gib,
            "findings": {f.rule: f.message[:600] for f in r.integrity}}


class ModeRun(NamedTuple):
    """One mode's run: its wall time, a row per candidate, what the processes held on the GPU."""

    wall_s: float
    rows: list[dict[str, Any]]
    gpu_memory: dict[str, Any]


async def evaluate_all(cands: list[tuple[Any, str, str]], workers: int,
                       on_row: Any = None) -> ModeRun:
    """Evaluate every candidate through one pool of `workers`; on_row(rows, wall_s) after each one ends."""
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.evaluate.pool import WorkerPool

    pool = WorkerPool(workers, TARGET["device"])
    if pool.size < workers:  # evaluate.pool.slot_devices: no more judges than half the GPU's memory holds
        print(f"  {pool.size} judges of the {workers} asked: as many as half the device's memory holds", flush=True)
    # The torch.compile baseline is per problem (cached across its candidates), not per candidate:
    # leave it out so both modes measure candidate work only (compile, check, time vs eager).
    cfg = EvalConfig(backend=TARGET["backend"], device=TARGET["device"], timeout_s=900.0, time_compile_baseline=False)
    rows: list[dict[str, Any]] = []

    async def one(problem: Any, code: str, tid: str) -> None:
        t = time.perf_counter()
        try:
            r = await pool.evaluate(problem, code, dataclasses.replace(cfg, overrides=dict(problem.overrides)))
            rows.append({"problem": problem.id, "template": tid, "start_s": round(t - t0, 2),
                         **stage_row(r, time.perf_counter() - t)})
        except Exception as exc:  # noqa: BLE001
            rows.append({"problem": problem.id, "template": tid, "error": str(exc)})
        if on_row is not None:
            on_row(rows, time.perf_counter() - t0)

    # Every judge started first (its zygote, spare sandbox, the device's context and copy bandwidth):
    # a one-time cost per worker that both modes leave out, so the figures are the steady state.
    await pool.warm(cfg)
    t0 = time.perf_counter()
    from gpu_memory import PerProcess

    with PerProcess(say_every_s=20.0 if workers > 1 else None) as seen:
        try:
            if workers == 1:
                for c in cands:
                    await one(*c)
            else:
                await asyncio.gather(*(one(*c) for c in cands))
        finally:
            await pool.close()
    return ModeRun(time.perf_counter() - t0, rows, gpu_memory_figures(seen))


def gpu_memory_figures(seen: Any) -> dict[str, Any]:
    """From gpu_memory.PerProcess over a mode: the device's peak (the largest sum over processes of
    one sample) and, per kind of process (the judges, the zygote and its sandboxes, this bench),
    their count and the median and largest of their peaks, GiB: which of them fill the device when
    evaluations of small problems run out of it beside each other (the pool's ran_alone warnings)."""
    def kind(pid: int) -> str:  # htam's processes name themselves by role (limits.name_process)
        name, command = seen.names.get(pid, ""), seen.commands.get(pid, "?")
        if name.startswith("htam-"):
            return name
        return next((m for m in ("evaluate.worker", "evaluate.zygote", "gpu_batch.py") if m in command), command[-40:])

    by_kind: dict[str, list[int]] = {}
    for pid, peak in seen.peaks.items():
        by_kind.setdefault(kind(pid), []).append(peak)
    gib = float(1 << 30)
    return {"sampled": seen.ok, "device_peak_gib": round(seen.total_peak / gib, 1),
            "by_kind": {k: {"processes": len(v), "median_peak_gib": round(statistics.median(v) / gib, 2),
                            "max_peak_gib": round(max(v) / gib, 2)} for k, v in by_kind.items()}}


def mode_figures(rows: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """The mode's rate and where its time went: the device held alone, summed over its evaluations,
    is the part a pool on one GPU cannot overlap (its bound: n / that sum); the medians of the
    stages and of the waits for the device."""
    def median(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return round(statistics.median(values), 2) if values else None

    alone = sum(r.get("device_alone_s", 0.0) for r in rows)
    return {"n": len(rows), "wall_s": round(wall_s, 1), "per_minute": round(len(rows) / (wall_s / 60), 2),
            "device_alone_sum_s": round(alone, 1),
            "medians": {k: median(k) for k in ("compile_s", "check_s", "first_call_s", "baseline_s", "time_s",
                                               "lock_wait_s", "device_alone_s", "total_s", "judge_allocated_gib",
                                               "judge_reserved_gib")},
            "rows": rows}


def progress(report: dict[str, Any], line: str) -> None:
    """Print a line and keep what the part has so far: a part cut off by its time limit still
    leaves its finished modes in gpu_batch.json and in the log."""
    REPORT["throughput"] = report
    save()
    print(line, flush=True)


@part("throughput")
def run_throughput(args: argparse.Namespace) -> dict[str, Any]:
    found = asyncio.run(offline_candidates(args.parallel + 1))
    cands, warm = found[: args.parallel], found[args.parallel:]
    if not cands:
        raise RuntimeError(f"the offline proposer produced no {TARGET['backend']} candidates")
    out: dict[str, Any] = {"candidates": len(cands), "workers": args.workers, "cpu_cores": os.cpu_count(),
                           "backend": TARGET["backend"], "finished": False}
    print(f"throughput: {len(cands)} distinct {TARGET['backend']} candidates, a pool of {args.workers}, then "
          f"{args.sequential} one at a time", flush=True)
    # Each mode starts from an empty cache warmed by one extra candidate (not counted), which
    # builds the shared precompiled header: a one-time cost per machine, not per candidate.
    os.environ["HTAM_PCH_AFTER"] = "1"
    fresh_cache("parallel")
    out["warmup_s"] = [round(asyncio.run(evaluate_all(warm, 1))[0], 1)]
    def pool_row(rows: list[dict[str, Any]], wall: float) -> None:  # each as it ends: a cut-off run still says
        r = rows[-1]
        print(f"    pool {len(rows)}/{len(cands)} at {wall:.1f} s: {r.get('problem')} {r.get('status', r.get('error'))}, "
              f"{r.get('wall_s')} s, waited {r.get('lock_wait_s')} s, alone {r.get('device_alone_s')} s"
              + "".join(f"; {rule}: {msg}" for rule, msg in (r.get("findings") or {}).items()), flush=True)

    wall_p, rows_p, memory_p = asyncio.run(evaluate_all(cands, args.workers, pool_row))
    out["parallel"] = mode_figures(rows_p, wall_p)
    out["parallel"]["gpu_memory"] = memory_p
    out["statuses"] = {s: sum(1 for r in rows_p if r.get("status") == s) for s in {r.get("status") for r in rows_p}}
    progress(out, f"  pool: {len(rows_p)} in {wall_p:.1f} s, {out['parallel']['per_minute']} a minute; "
                  f"statuses {out['statuses']}; the device alone {out['parallel']['device_alone_sum_s']} s in all; "
                  f"medians {out['parallel']['medians']}; GPU memory {out['parallel']['gpu_memory']}")
    fresh_cache("sequential")
    out["warmup_s"].append(round(asyncio.run(evaluate_all(warm, 1))[0], 1))

    def sequential(rows: list[dict[str, Any]], wall: float) -> None:
        out["sequential"] = mode_figures(list(rows), wall)
        rate_s = out["sequential"]["per_minute"]
        out["speedup_of_rate"] = round(out["parallel"]["per_minute"] / rate_s, 2) if rate_s else None

    def one_ended(rows: list[dict[str, Any]], wall: float) -> None:  # one at a time, each reported as it ends
        sequential(rows, wall)
        progress(out, f"  one at a time: {len(rows)} in {wall:.1f} s, {out['sequential']['per_minute']} a minute; "
                      f"pool / one at a time {out['speedup_of_rate']}x ({rows[-1].get('problem')}: "
                      f"{rows[-1].get('status')}, {rows[-1].get('wall_s')} s; the device alone "
                      f"{rows[-1].get('device_alone_s')} s)")

    wall_s, rows_s, _ = asyncio.run(evaluate_all(cands[: args.sequential], 1, one_ended))
    sequential(rows_s, wall_s)  # the mode's wall, its pool's close included, as the pool's has
    ok_compiles = [r["compile_s"] for r in rows_s if "compile_s" in r and not r.get("cached")]
    out["median_compile_s_one_at_a_time"] = round(statistics.median(ok_compiles), 1) if ok_compiles else None
    for slots in args.pool_slots:
        pool_with_slots(out, cands, warm, args.workers, slots)
    out["finished"] = True
    return out


def pool_with_slots(out: dict[str, Any], cands: list[Any], warm: list[Any], workers: int, slots: int) -> None:
    """The same pool again with the device's memory cut into `slots` units (the gpu_check_slots
    setting: at most that many evaluations hold state at once), from a fresh cache warmed as before:
    whether fewer evaluations at once, none of them run again alone for want of memory, evaluate
    more a minute than the default admission's (out["parallel"]). The ratio is against the same
    one-at-a-time figure."""
    before = os.environ.get("HTAM_GPU_CHECK_SLOTS")
    os.environ["HTAM_GPU_CHECK_SLOTS"] = str(slots)  # the judges the pool starts read it
    try:
        fresh_cache(f"slots{slots}")
        asyncio.run(evaluate_all(warm, 1))
        wall, rows, memory = asyncio.run(evaluate_all(cands, workers))
    finally:
        if before is None:
            os.environ.pop("HTAM_GPU_CHECK_SLOTS", None)
        else:
            os.environ["HTAM_GPU_CHECK_SLOTS"] = before
    key = f"parallel_slots_{slots}"
    out[key] = mode_figures(rows, wall)
    out[key]["gpu_memory"] = memory
    rate = (out.get("sequential") or {}).get("per_minute")
    out[key]["speedup_of_rate"] = round(out[key]["per_minute"] / rate, 2) if rate else None
    alone = sum(1 for r in rows if "ran_alone" in (r.get("findings") or {}))
    progress(out, f"  pool with {slots} slots: {len(rows)} in {wall:.1f} s, {out[key]['per_minute']} a minute, "
                  f"{out[key]['speedup_of_rate']}x one at a time; {alone} run again alone; the device alone "
                  f"{out[key]['device_alone_sum_s']} s in all; medians {out[key]['medians']}")


# ---------------------------------------------------------------------------- compile time
KERNEL = r"""
__global__ void scale_relu_kernel(const float* __restrict__ x, float* __restrict__ y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = a * x[i]; y[i] = v > 0.f ? v : 0.f; }
}
"""
USUAL_CU = "#include <torch/extension.h>\n" + KERNEL + r"""
torch::Tensor scale_relu(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    scale_relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
    return y;
}
"""
USUAL_CPP = "torch::Tensor scale_relu(torch::Tensor x, double a);"
SPLIT_CU = "#include <cuda_runtime.h>\n" + KERNEL + r"""
void scale_relu_launch(const float* x, float* y, float a, long n, cudaStream_t s) {
    scale_relu_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, y, a, n);
}
"""
SPLIT_CPP = r"""#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void scale_relu_launch(const float* x, float* y, float a, long n, cudaStream_t s);
torch::Tensor scale_relu(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    scale_relu_launch(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, x.numel(),
                      c10::cuda::getCurrentCUDAStream());
    return y;
}
"""


def build_pch(pch_dir: Path, extra_cflags: list[str]) -> float:
    """A precompiled torch/extension.h under pch_dir/torch/, built by htam's own command (the
    flags load_inline gives the host unit); load_inline finds it through
    extra_include_paths=[pch_dir] (-I folders are searched before torch's -isystem ones; gcc
    takes the .gch when the flags match and silently reads the header when they do not)."""
    from htam_engine.evaluate import pch

    pch.link_header(pch_dir, with_cuda=True)
    cmd = pch.build_command(pch_dir / "torch" / "extension.h", pch_dir / "torch" / "extension.h.gch",
                            extra_cflags, with_cuda=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def compile_once(tag: str, variant: str, pch_dir: Path | None) -> dict[str, Any]:
    import torch
    from torch.utils.cpp_extension import load_inline

    d = tempfile.mkdtemp(prefix=f"htam-compile-{tag}-")
    kw: dict[str, Any] = {"build_directory": d, "functions": ["scale_relu"], "verbose": False}
    if pch_dir is not None:
        kw["extra_include_paths"] = [str(pch_dir)]
        kw["extra_cflags"] = ["-Winvalid-pch"]  # a warning in the log if the header was not used
    if variant == "split":
        kw.update(cpp_sources=SPLIT_CPP, cuda_sources=SPLIT_CU, no_implicit_headers=True)
    else:
        kw.update(cpp_sources=USUAL_CPP, cuda_sources=USUAL_CU)
    t = time.perf_counter()
    mod = load_inline(name=f"bench_{tag}", **kw)
    wall = time.perf_counter() - t
    x = torch.randn(4096, device="cuda")
    ok = bool(torch.allclose(mod.scale_relu(x, 2.0), torch.relu(2 * x)))
    units = {}
    log = Path(d) / ".ninja_log"
    if log.exists():
        for line in log.read_text().splitlines()[1:]:
            start, end, _, target, _ = line.split("\t")
            units[target] = round((int(end) - int(start)) / 1000, 1)
    shutil.rmtree(d, ignore_errors=True)
    return {"wall_s": round(wall, 1), "correct": ok, "units_s": units}


@part("compile")
def run_compile(args: argparse.Namespace) -> dict[str, Any]:
    from torch.utils.cpp_extension import load_inline

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    stamp = int(time.time())
    pch_dir = Path(tempfile.mkdtemp(prefix="htam-pch-"))
    out: dict[str, Any] = {"arch_list": os.environ["TORCH_CUDA_ARCH_LIST"], "reps": args.reps}
    out["pch_build_s"] = round(build_pch(pch_dir, []), 1)
    variants = [("usual", "usual", None), ("usual+pch", "usual", pch_dir)]
    if "no_implicit_headers" in inspect.signature(load_inline).parameters:
        variants.append(("split+pch", "split", pch_dir))
    for label, variant, pch in variants:
        runs = []
        for i in range(args.reps):
            try:
                runs.append(compile_once(f"{label.replace('+', '_')}_{stamp}_{i}", variant, pch))
            except Exception as exc:  # noqa: BLE001
                runs.append({"error": str(exc)[-2000:]})
        walls = [r["wall_s"] for r in runs if "wall_s" in r]
        out[label] = {"median_s": statistics.median(walls) if walls else None, "runs": runs}
    base = out["usual"]["median_s"]
    for label, _, _ in variants[1:]:
        m = out[label]["median_s"]
        out[label]["cut"] = round(1 - m / base, 3) if base and m else None
    shutil.rmtree(pch_dir, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="compile,throughput,batch")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 8)
    ap.add_argument("--parallel", type=int, default=32, help="distinct candidates for the parallel pool")
    ap.add_argument("--sequential", type=int, default=6, help="of those, how many one at a time")
    ap.add_argument("--pool-slots", type=lambda v: [int(x) for x in v.split(",") if x], default=[],
                    help="after both modes, the pool again with the device's memory cut into each of these "
                         "numbers of units (gpu_check_slots), e.g. 4,8")
    ap.add_argument("--reps", type=int, default=2, help="compiles per variant in the compile part")
    ap.add_argument("--batch-deadline", type=float, default=3600.0,
                    help="seconds after which the batch part stops and reports what finished")
    ap.add_argument("--backend", default=None, choices=["cuda", "triton", "cpp"],
                    help="the candidates' backend (default cuda on a GPU, cpp on the CPU; triton's ~2 s compiles "
                         "let the throughput part finish in a few minutes)")
    ap.add_argument("--device", default=None, choices=["cuda", "cpu"],
                    help="cuda (default where a GPU is visible); cpu runs the throughput part with cpp candidates")
    args = ap.parse_args()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and set(args.parts.split(",")) != {"throughput"}:
        print("without a GPU only --parts throughput runs (--device cpu)")
        sys.exit(0)
    if device == "cuda" and not torch.cuda.is_available():
        print("needs a CUDA GPU")
        sys.exit(0)
    TARGET.update(device=device, backend=args.backend or ("cuda" if device == "cuda" else "cpp"))
    load_previous()
    REPORT["device"] = {"name": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "torch": torch.__version__,
                        "cuda": torch.version.cuda, "cores": os.cpu_count(),
                        "gpus": torch.cuda.device_count() if device == "cuda" else 0}
    parts = {"compile": run_compile, "throughput": run_throughput, "batch": run_batch}
    for name in args.parts.split(","):
        parts[name.strip()](args)
    save()
    print(f"wrote {OUT / 'gpu_batch.json'}")


if __name__ == "__main__":
    main()
