"""Agreement with KernelBench over a batch: 33 KernelBench level 1-2 problems at official sizes,
the offline proposer (Triton, few steps) through `htam batch --jobs 4`, every best exported and
re-run through KernelBench's own eval_kernel_against_ref beside htam's evaluation (htam verify),
first with the GPU otherwise idle, then again while another `htam batch --jobs 4` loads it.

Run on one H200, in two calls that fit a 10-minute command limit (the second reuses the first's
batch from --work, which stays while the machine does; --deadline stops a part early, saying so):

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_verify.py --parts alone   # ~7 min
    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_verify.py --parts load    # ~3 min

and here, on the CPU, at small sizes (problems shrunk to --budget-mb of inputs, KernelBench's
trials cut, and the test double of a checkout in tests/htam_engine/verify/fake_kernelbench in
place of KernelBench, whose evaluation needs CUDA):

    HTAM_KERNELBENCH=/work/kb python3 tests/bench/gpu_verify.py --limit 3 --load-problems 2

With --resume FILE (an earlier call's gpu_verify.json, of the same commit) its rows are kept and
their problems not verified again, so a table of 30 grows over device sessions whose parts each
verify what their time allows (KernelBench's own eval of one export takes 10-125 s at official sizes).

With --exports DIR it verifies a folder of exported solutions instead (an earlier batch's
DIR/solutions, carried to the machine): no batch runs, so a device session's time goes to
verifying (`VERIFY_EXPORTS=DIR bash tests/bench/gpu_all.sh verify`).

Prints the problem list, then per part a table (problem; the speedup the batch reported, timed
under its own --jobs load; htam's and KernelBench's verdict and speedup in the verification; the
gap (htam - KernelBench) / KernelBench) and how many are within 3 %. Writes $OUT/gpu_verify.json after
every row ("partial": true until the run ends), so a part's timeout keeps the rows verified before it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kb_problems import ROOT, shrunk_copy  # noqa: E402

FAKE_CHECKOUT = ROOT / "tests" / "htam_engine" / "verify" / "fake_kernelbench"

# Level 1: the three worst gaps and two smaller ones; level 2: the smallest official
# inputs the offline proposer covers (a KernelBench run draws its inputs on the CPU: the 8 GiB
# level-1 sets cost it ~2 s a draw, seven draws a run).
PROBLEMS = [
    "level1/88_MinGPTNewGelu", "level1/47_Sum_reduction_over_a_dimension", "level1/94_MSELoss",
    "level1/12_Matmul_with_diagonal_matrices_", "level1/40_LayerNorm",
    "level2/68_Matmul_Min_Subtract", "level2/15_ConvTranspose3d_BatchNorm_Subtract",
    "level2/55_Matmul_MaxPool_Sum_Scale", "level2/56_Matmul_Sigmoid_Sum", "level2/59_Matmul_Swish_Scaling",
    "level2/74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max", "level2/6_Conv3d_Softmax_MaxPool_MaxPool",
    "level2/50_ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling",
    "level2/58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp",
    "level2/60_ConvTranspose3d_Swish_GroupNorm_HardSwish", "level2/79_Conv3d_Multiply_InstanceNorm_Clamp_Multiply_Max",
    "level2/89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max",
    "level2/96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp", "level2/9_Matmul_Subtract_Multiply_ReLU",
    "level2/12_Gemm_Multiply_LeakyReLU", "level2/14_Gemm_Divide_Sum_Scaling",
    "level2/20_ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd", "level2/22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish",
    "level2/29_Matmul_Mish_Mish", "level2/30_Gemm_GroupNorm_Hardtanh", "level2/33_Gemm_Scale_BatchNorm",
    "level2/49_ConvTranspose3d_Softmax_Sigmoid", "level2/62_Matmul_GroupNorm_LeakyReLU_Sum", "level2/63_Gemm_ReLU_Divide",
    "level2/23_Conv3d_GroupNorm_Mean",
    # three more that earlier tables exported correct and verified: 2/14 has never had a correct
    # candidate and 1/47 was turned down on the H200 (2 of 28 short at 127d532), and the issue asks
    # for at least 30 exports
    "level2/76_Gemm_Add_ReLU", "level2/1_Conv2D_ReLU_BiasAdd", "level2/25_Conv2d_Min_Tanh_Tanh",
]


def problem_files(root: Path, names: list[str], budget: int | None, work: Path) -> list[Path]:
    files = []
    for name in names:
        path = root / f"{name}.py"
        if budget is not None:
            small = shrunk_copy(path, budget, work / "problems" / name.split("/")[0])
            if small is None:
                print(f"  {name}: no size fits {budget} bytes, left out", flush=True)
                continue
            path = small
        files.append(path)
    return files


def htam_batch(files: list[Path], out: Path, args: argparse.Namespace, device: str, env: dict[str, str],
               log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "htam_engine", "batch", *map(str, files), "--out", str(out), "--device", device,
           "--backend", "triton", "--proposer", "offline", "--steps", str(args.steps), "--jobs", str(args.jobs),
           "--no-compile-baseline"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
                            start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def finished(out: Path, ids: list[str]) -> bool:
    """A batch in `out` that finished every one of these problems (a later part reuses it)."""
    try:
        doc = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return not doc.get("unfinished") and {r["problem"] for r in doc.get("rows", [])} >= set(ids)


def batch_speedups(out: Path) -> dict[str, float | None]:
    try:
        rows = json.loads((out / "results.json").read_text())["rows"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["problem"]: r.get("speedup_eager") for r in rows}


def names_in_batch(out: Path, limit: int) -> list[str]:
    """Problems of a finished batch worth verifying ('levelN/NAME'): this file's list first (the known
    gaps), then the batch's other correct problems in its order, `limit` in all."""
    try:
        rows = json.loads((out / "results.json").read_text())["rows"]
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"gpu_verify: no batch results in {out}: {exc}")
    correct = [r["problem"].split(":", 1)[-1] for r in rows if r.get("correct")]
    ordered = [n for n in PROBLEMS if n in correct] + [n for n in correct if n not in PROBLEMS]
    return ordered[:limit]


def exported_solutions(folder: Path) -> dict[str, tuple[Path, float | None]]:
    """'levelN/NAME' -> (the export, the speedup its session measured), from each export's first line
    ('# htam solution for kernelbench:levelN/NAME, session ..., speedup vs eager X on ...')."""
    found: dict[str, tuple[Path, float | None]] = {}
    for path in sorted(folder.glob("*.py")):
        head = path.read_text(encoding="utf-8").partition("\n")[0]
        m = re.match(r"# htam solution for kernelbench:(level\d+/[^,]+),", head)
        if m:
            speed = re.search(r"speedup vs eager ([\d.]+)", head)
            found[m.group(1)] = (path, float(speed.group(1)) if speed else None)
    if not found:
        sys.exit(f"gpu_verify: no htam exports of KernelBench problems in {folder}")
    return found


def ordered_names(names: list[str], limit: int | None) -> list[str]:
    """This file's list first (the known gaps), then the rest in their order, `limit` in all."""
    ordered = [n for n in PROBLEMS if n in names] + [n for n in names if n not in PROBLEMS]
    return ordered[:limit] if limit else ordered


def clock_figures(r: Any) -> dict[str, Any]:
    """Where htam's figure came from: the sandbox's reported median trial, the figure the verdict used
    (the judge's clock replaces a reported median below it: clock.judged_runtime), the median
    overhead each sandbox's calls showed on the judge's wall clock beyond their reported times, and
    the evaluation's findings by rule. A candidate whose overhead exceeds the reference's has the
    difference counted in its time, which KernelBench's in-process events do not see."""
    reported = r.runtime_spread.median_ms if r.runtime_spread else None
    clock = r.clock
    return {"reported_ms": reported, "used_ms": r.runtime_ms,
            "candidate_overhead_ms": round(clock.candidate_overhead_ms, 4) if clock else None,
            "reference_overhead_ms": round(clock.reference_overhead_ms, 4) if clock else None,
            "margin_ms": round(clock.margin_ms, 4) if clock else None,
            "findings": sorted({f.rule for f in r.integrity})}


def verify_all(pairs: list[tuple[Any, Path]], checkout: Any, device: str, settings: Any, deadline: float,
               batch_x: dict[str, float | None], label: str,
               on_row: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    from htam_engine.loop.report import times
    from htam_engine.problems import load_problem
    from htam_engine.verify import report
    from htam_engine.verify.side_by_side import verify_solution

    rows = []
    print(f"\n== {label}", flush=True)
    print(" | ".join(["problem", "batch x", *report.HEADERS[1:]]), flush=True)
    for i, (problem, solution) in enumerate(pairs):
        if time.monotonic() > deadline:
            print(f"  stopped at the deadline after {i} of {len(pairs)}", flush=True)
            break
        t0, started = time.monotonic(), time.time()
        stages: list[tuple[str, float]] = []  # where each export's seconds go (KernelBench's side, then htam's)
        try:
            v = verify_solution(str(solution), solution.read_text(), load_problem(problem.path), checkout, device,
                                settings, on_stage=lambda name: stages.append((name, time.monotonic())))
        except Exception as exc:  # noqa: BLE001 - one export's fault (KernelBench's import included) loses its row only
            print(f"  {problem.id}: not verified: {type(exc).__name__}: {exc}", flush=True)
            continue
        ends = [t for _, t in stages[1:]] + [time.monotonic()]
        split = ", ".join(f"{name.split()[0]} {end - t:.0f} s" for (name, t), end in zip(stages, ends))
        cells = report.row(v)
        bx = batch_x.get(problem.id)
        print(" | ".join([cells[0], times(bx), *cells[1:]]) + f"  ({time.monotonic() - t0:.0f} s: {split})", flush=True)
        if v.kernelbench.error:
            print(f"    KernelBench: {v.kernelbench.error}", flush=True)
        if v.htam.diagnostics.message:  # why htam's verdict is not ok: the row alone does not say
            print(f"    htam: {v.htam.diagnostics.message}", flush=True)
        clock = clock_figures(v.htam)
        print(f"    htam clock: {clock}", flush=True)
        doc = v.to_dict()
        doc["htam"].pop("result")
        doc["htam_clock"] = clock
        doc["wall_clock"] = {"started": started, "ended": time.time()}  # unix seconds, to read beside the GPU's clocks
        doc["batch_speedup"] = bx
        doc["batch_gap"] = (bx - v.kernelbench.speedup) / v.kernelbench.speedup if bx and v.kernelbench.speedup else None
        rows.append(doc)
        on_row(rows)
    summarize(rows)
    return rows


def summarize(rows: list[dict[str, Any]], label: str = "") -> None:
    """How many rows agree with KernelBench: the verdict, htam verify's speedup and the batch's own."""
    from htam_engine.verify import report
    from htam_engine.verify.settings import AGREEMENT

    gaps = [r["speedup_gap"] for r in rows if r["speedup_gap"] is not None]
    bgaps = [r["batch_gap"] for r in rows if r["batch_gap"] is not None]
    within = lambda gs: sum(abs(g) <= AGREEMENT for g in gs)  # noqa: E731
    print(f"{label + ': ' if label else ''}same verdict: {sum(r['verdicts_agree'] for r in rows)} of {len(rows)}; "
          f"htam verify within {100 * AGREEMENT:g} % of KernelBench: {within(gaps)} of {len(gaps)}; the batch's "
          f"own speedup within {100 * AGREEMENT:g} %: {within(bgaps)} of {len(bgaps)}", flush=True)
    outside = [r for r in rows if r["speedup_gap"] is not None and abs(r["speedup_gap"]) > AGREEMENT]
    for r in outside:  # KernelBench's own spread over its 100 trials beside htam's median, kernel and eager
        kb, h = r["kernelbench"], r["htam"]

        def spread(ms: float, st: dict[str, float], trials: list[float]) -> str:
            shown = report.trials_text(trials) if trials else f"{st.get('min')}-{st.get('max')}"  # older rows: no trials
            return f"{ms:.4g} ms against KernelBench's mean {st.get('mean')} ({shown}, std {st.get('std')})"

        # htam's figure is a median, KernelBench's a mean (Verification.median_gap)
        gap_at_median = f"; against KernelBench's medians {100 * r['median_gap']:+.1f} %" if r.get("median_gap") is not None else ""
        print(f"  {r['problem']} ({100 * r['speedup_gap']:+.1f} %{gap_at_median}): kernel "
              f"{spread(h['runtime_ms'], kb['runtime_stats'], kb.get('runtime_trials') or [])}; eager "
              f"{spread(h['ref_runtime_ms'], kb['ref_runtime_stats'], kb.get('ref_runtime_trials') or [])}", flush=True)


def problem_name(ident: str) -> str:
    """A problem's file name from its id or list entry: kernelbench:level1/88_MinGPTNewGelu, level1/88_MinGPTNewGelu
    and (a shrunk copy, on the CPU) 88_MinGPTNewGelu all give 88_MinGPTNewGelu."""
    return ident.rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def current_commit() -> str | None:
    """The checkout's commit: HTAM_BENCH_COMMIT where set (a device's copy of the working tree has
    no history: name it in the command), else git's, else None."""
    if os.environ.get("HTAM_BENCH_COMMIT"):
        return os.environ["HTAM_BENCH_COMMIT"][:7]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def resumed_rows(path: Path, commit: str | None) -> list[dict[str, Any]]:
    """The verified rows of an earlier call's report, refused (SystemExit, one line) when both
    commits are known and differ: rows of other code do not belong in one table."""
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        sys.exit(f"--resume {path}: cannot read it ({exc})")
    if commit and earlier.get("commit") and earlier["commit"] != commit:
        sys.exit(f"--resume {path}: its rows are of commit {earlier['commit']}, this is {commit}")
    return list(earlier.get("alone") or [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", default=os.environ.get("HTAM_KERNELBENCH"), help="checkout (or its KernelBench folder)")
    ap.add_argument("--parts", default="alone,load")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="first N problems of the list (default all 33)")
    ap.add_argument("--skip", default="", help="comma-separated problems (levelN/NAME) not to verify: those an "
                                               "earlier call verified")
    ap.add_argument("--resume", default=None,
                    help="an earlier call's gpu_verify.json (same commit): its verified rows are kept, their "
                         "problems skipped, and the summary covers both")
    ap.add_argument("--load-problems", type=int, default=8, help="how many exports to verify again under load")
    ap.add_argument("--deadline", type=float, default=480, help="seconds for the whole run; parts stop early after it")
    ap.add_argument("--budget-mb", type=float, default=None, help="shrink inputs (default: official on CUDA, 1 on the CPU)")
    ap.add_argument("--batch", default=None,
                    help="verify the exports of this finished batch folder (e.g. kb_table.py's $OUT/kb_table) "
                         "instead of running one: the list's problems it has first, then its other correct ones, "
                         "up to --limit (default all of the list)")
    ap.add_argument("--exports", default=None,
                    help="verify the exported solutions in this folder (`htam sessions export` files, each naming its "
                         "problem and speedup on its first line; e.g. an earlier batch's DIR/solutions) instead of "
                         "running or reading a batch: a device session's time goes to verifying")
    ap.add_argument("--work", default=None, help="batch folders and logs; a finished batch there is reused "
                                                 "(default /tmp/htam-gpu-verify)")
    args = ap.parse_args()
    import torch

    t_start = time.monotonic()
    deadline = t_start + args.deadline
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if not args.kernelbench:
        sys.exit("set HTAM_KERNELBENCH (or --kernelbench) to a KernelBench checkout")
    given = Path(args.kernelbench)
    kb_root = given.parent if given.name == "KernelBench" else given
    from htam_engine.verify.checkout import find_checkout
    from htam_engine.verify.exports import export_bests
    from htam_engine.verify.settings import KernelBenchSettings

    gpu = device.startswith("cuda")
    checkout = find_checkout(kb_root if gpu else FAKE_CHECKOUT)
    settings = KernelBenchSettings() if gpu else KernelBenchSettings(correct_trials=2, perf_trials=5)
    budget_mb = args.budget_mb if args.budget_mb is not None else (None if gpu else 1)
    budget = None if budget_mb is None else int(budget_mb * 2**20)
    work = Path(args.work or Path(tempfile.gettempdir()) / "htam-gpu-verify")
    work.mkdir(parents=True, exist_ok=True)
    report_path = Path(os.environ.get("OUT") or ".") / "gpu_verify.json"
    names = PROBLEMS[: args.limit]
    exports = exported_solutions(Path(args.exports)) if args.exports else {}
    if exports:
        names = ordered_names(list(exports), args.limit)
    elif args.batch:
        names = names_in_batch(Path(args.batch), args.limit or len(PROBLEMS))
    skipped = set(filter(None, args.skip.split(",")))
    commit = current_commit()
    earlier = resumed_rows(Path(args.resume), commit) if args.resume else []
    done = {problem_name(row["problem"]) for row in earlier}
    names = [n for n in names if n not in skipped and problem_name(n) not in done]
    print(f"device {device}; KernelBench: {checkout.root}{'' if gpu else ' (test double: KernelBench needs CUDA)'}; "
          f"settings {settings.to_dict()}; sizes {'official' if budget is None else f'shrunk to {budget_mb:g} MiB'}")
    print(f"problems ({len(names)}): {', '.join(names)}", flush=True)
    files = problem_files(kb_root / "KernelBench", names, budget, work)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    doc: dict[str, Any] = {"device": device, "commit": commit, "problems": names, "settings": settings.to_dict()}
    if earlier:
        print(f"kept from {args.resume}: {len(earlier)} verified rows ({', '.join(sorted(done))})", flush=True)

    from htam_engine.loop.batch import Batch, BatchSpec
    from htam_engine.problems import load_problem

    t0 = time.monotonic()
    out = Path(args.batch) if args.batch else work / "batch"
    problems = [load_problem(str(f)) for f in files]
    if exports:
        print(f"\nthe exported solutions in {args.exports}", flush=True)
    elif args.batch:
        print(f"\nbatch: the exports of {out}", flush=True)
    elif finished(out, [p.id for p in problems]):
        print(f"\nbatch: reusing the finished one in {out}", flush=True)
    else:
        proc = htam_batch(files, out, args, device, env, work / "batch.log")
        proc.wait()
        print(f"\nbatch ({args.jobs} jobs, {args.steps} step(s)): exit {proc.returncode} in {time.monotonic() - t0:.0f} s;"
              f" log {work / 'batch.log'}", flush=True)
    if exports:
        pairs, skipped = [(p, exports[n][0]) for p, n in zip(problems, names)], {}  # files are in names' order
        batch_x = {p.id: exports[n][1] for p, n in zip(problems, names)}
    else:
        pairs, skipped = export_bests(Batch(BatchSpec(suites=[], out=str(out))), problems)
        batch_x = batch_speedups(out)
    for pid, why in skipped.items():
        print(f"  not verified: {pid}: {why}", flush=True)
    doc["skipped"] = skipped
    def write(partial: dict[str, Any]) -> None:
        """The report so far: a part's timeout ends the process between rows' writes (a KernelBench row takes
        10-160 s at official sizes, past what the deadline, checked before each row, leaves)."""
        report_path.write_text(json.dumps({**doc, **partial, "wall_s": round(time.monotonic() - t_start, 1)},
                                          indent=2, default=str))

    if "alone" in args.parts:
        doc["alone"] = earlier + verify_all(pairs, checkout, device, settings, deadline, batch_x,
                                            "verified with the GPU otherwise idle",
                                            on_row=lambda rows: write({"alone": earlier + rows, "partial": True}))
        if earlier:
            summarize(doc["alone"], "with the kept rows")
    if "load" in args.parts:
        for old in ("load-batch", "load-cache"):  # a fresh batch with nothing cached: it compiles too
            shutil.rmtree(work / old, ignore_errors=True)
        load_env = {**env, "HTAM_CACHE_DIR": str(work / "load-cache")}
        load = htam_batch(files, work / "load-batch", args, device, load_env, work / "load-batch.log")
        try:
            time.sleep(5 if gpu else 2)  # its workers start and its first compiles begin
            doc["load"] = verify_all(pairs[: args.load_problems], checkout, device, settings, deadline, batch_x,
                                     f"verified again while `htam batch --jobs {args.jobs}` runs beside it",
                                     on_row=lambda rows: write({"load": rows, "partial": True}))
        finally:
            still = load.poll() is None
            stop(load)
        print(f"(the load batch was {'still running' if still else 'already done'} when the part ended)")
    write({})
    print(f"\nwall {round(time.monotonic() - t_start, 1)} s; written: {report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
