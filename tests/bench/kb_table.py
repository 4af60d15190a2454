"""The offline proposer over KernelBench: one table (per problem: status, x eager, x torch.compile,
moves, steps), level geomeans and fast_p against both baselines, in one call.

On the H200 (official sizes, Triton, at most 6 steps; --deadline 480 seconds in all, then about
half a minute to stop the workers and write the table):

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/kb_table.py --device cuda --out $OUT

With --direct each candidate and both baselines are measured KernelBench's way in long-lived
processes (htam_engine/experiment/direct.py: the offline proposer's own code only, never a model's)
instead of through the judge, whose isolation costs 5-20 s of the device per evaluation at these
sizes; the table's header names the evaluator.

Here on the CPU (shrunk inputs, Triton through the interpreter, a few problems):

    HTAM_KERNELBENCH=/work/kb python3 tests/bench/kb_table.py --device cpu --problems 1/19,1/23,2/12 --steps 2

Every problem is first planned on the backend: one the proposer cannot write kernels for is listed
as unsupported with the reason and not run. The rest run as `htam batch` does (one session per
problem, the memory bank carried from problem to problem, the worker pool shared by `--jobs`
problems in flight), in an order that keeps every prefix representative (--order stratified: each
(level, family) stratum in proportion to its size, its problems spread over their numbering), so a
run cut off by the deadline still estimates each level's figures from a sample like the whole;
--first puts named problems (the ones a decision waits on) ahead of that order.
`--deadline` counts from the start (planning included); then the run stops and the table shows
what finished (a problem's steps done so far count; problems never started are listed as not
reached). Coverage: planned problems with a candidate among those reached; geomeans over the
covered problems, a problem without a correct kernel counting 1.0 (its user keeps PyTorch), as the
issue's targets are stated; fast_p over the covered problems. With --out (or $OUT) the table is
written there as kb_table.md and kb_table.json, beside the batch folder kb_table/. One problem's
failure never stops the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FAST_P = (1.0, 1.5, 2.0)


def kernelbench_files(root: str, levels: list[int], picks: set[str] | None, limit: int | None) -> list[Path]:
    base = Path(root)
    if (base / "KernelBench").is_dir():
        base = base / "KernelBench"
    per_level: list[list[Path]] = []
    for level in levels:
        files = sorted((base / f"level{level}").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
        if picks is not None:
            files = [f for f in files if f"{level}/{f.name.split('_')[0]}" in picks]
        per_level.append(files[:limit] if limit else files)
    out: list[Path] = []  # interleaved: a run cut off by the deadline still covers every level
    for i in range(max((len(f) for f in per_level), default=0)):
        out += [files[i] for files in per_level if i < len(files)]
    return out


def problem_file(root: str, pick: str) -> Path:
    """The KernelBench file a level/number pick names ("2/73" -> level2/73_....py)."""
    level = int(pick.split("/")[0])
    found = kernelbench_files(root, [level], {pick}, None)
    if not found:
        raise SystemExit(f"no KernelBench file {pick} under {root}")
    return found[0]


def stratified_order(problems: list[Any]) -> list[Any]:
    """Problems ordered so that every prefix holds each (level, family) stratum in proportion to
    its size: the i-th of a stratum of n sits at (i + 0.5) / n; within a stratum its problems are
    taken spread over their numbering (KernelBench numbers neighbouring variants of one operator
    consecutively), so the first ones reached are not all variants of one kernel."""
    strata: dict[tuple[int, str], list[Any]] = {}
    for p in problems:
        strata.setdefault((p.level or 0, p.family.value), []).append(p)
    keyed = []
    for members in strata.values():
        n = len(members)
        for i, p in enumerate(_spread(members)):
            keyed.append(((i + 0.5) / n, p.level or 0, p.family.value, p))
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def _spread(items: list[Any]) -> list[Any]:
    """Items in bisection order (first, middle, quarters, ...): any prefix covers the whole range."""
    out, seen, step = [], set(), len(items)
    while len(out) < len(items):
        for i in range(0, len(items), max(1, step)):
            if i not in seen:
                seen.add(i)
                out.append(items[i])
        step //= 2
    return out


def load(files: list[Path], device: str, backend: str, max_elems: int | None) -> tuple[list[Any], dict[str, str]]:
    """(problems the proposer writes candidates for, {problem id: why not} for the others)."""
    from cpu_offline import shrink_overrides

    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import Unsupported, plan_problem, plan_space

    problems, refused = [], {}
    for path in files:
        label = f"{path.parent.name}/{path.stem}"
        try:
            overrides = shrink_overrides(str(path), max_elems, device) if max_elems else {}
            problem = load_problem(str(path), overrides, device=device)
        except Exception as exc:  # noqa: BLE001 - listed, the run goes on
            refused[label] = f"does not load: {exc}"
            continue
        try:
            plan_space(plan_problem(problem, backend), backend)
        except Unsupported as exc:
            refused[problem.id] = str(exc)
            continue
        except Exception as exc:  # noqa: BLE001
            refused[problem.id] = f"proposer fault: {type(exc).__name__}: {exc}"
            continue
        problems.append(problem)
    return problems, refused


def moves_of(session_path: str) -> tuple[list[str], str | None]:
    """The moves of a session's candidates in step order, and the move of its best candidate."""
    from htam_engine.propose.offline import parse_move
    from htam_engine.session import load_session

    session = load_session(session_path)
    moves: list[str] = []
    for step in session.steps:
        for c in step.candidates:
            if c.template and c.template not in moves:
                moves.append(c.template)
    return moves, parse_move(session.best_code)


def _geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def summarize(rows: list[dict[str, Any]], total: int, unsupported: int) -> dict[str, Any]:
    """Coverage among the problems reached (run or refused), correctness, geomeans (failures = 1.0)
    and fast_p over the covered problems."""
    covered = [r for r in rows if r["candidates"] > 0]
    correct = [r for r in covered if r["correct"]]

    def eff(r: dict[str, Any], key: str) -> float:
        return r[key] if r["correct"] and r.get(key) else 1.0

    out: dict[str, Any] = {
        "problems": total, "run": len(rows), "unsupported": unsupported,
        "not_reached": total - len(rows) - unsupported, "covered": len(covered),
        "coverage": len(covered) / (len(rows) + unsupported) if rows or unsupported else None,
        "correct": len(correct), "correct_of_covered": len(correct) / len(covered) if covered else None,
        "geomean_eager": _geomean([eff(r, "speedup_eager") for r in covered]),
        "geomean_compile": _geomean([eff(r, "speedup_compile") for r in covered]),
    }
    for key, name in (("speedup_eager", "eager"), ("speedup_compile", "compile")):
        for p in FAST_P:
            hits = sum(1 for r in correct if r.get(key) and r[key] > p)
            out[f"fast_{p:g}_{name}"] = hits / len(covered) if covered else None
    return out


def level_summaries(rows: list[dict[str, Any]], level_of: dict[str, int | None], refused: dict[str, str],
                    levels: list[int]) -> dict[str, dict[str, Any]]:
    """summarize() per level and over all: level_of names the level of every problem reached or refused."""
    summary = {}
    for level in levels:
        mine = [r for r in rows if level_of.get(r["problem"]) == level]
        total = sum(1 for lv in level_of.values() if lv == level)
        summary[str(level)] = summarize(mine, total, sum(1 for pid in refused if level_of[pid] == level))
    summary["all"] = summarize(rows, len(level_of), len(refused))
    return summary


def family_summaries(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """summarize() per operator family over the problems run (where the level figures are won or lost)."""
    by_family: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_family.setdefault(r.get("family") or "-", []).append(r)
    return {f: summarize(mine, len(mine), 0) for f, mine in sorted(by_family.items())}


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def markdown_table(rows: list[dict[str, Any]], refused: dict[str, str], not_reached: list[str],
                   summary: dict[str, dict[str, Any]], header: str) -> str:
    """The whole table as markdown: printed at the end and written to kb_table.md."""
    lines = [header, "", "| level | with a candidate / reached of all | correct of those | geomean x eager | geomean x torch.compile | "
             + " | ".join(f"fast_{p:g} eager / compile" for p in FAST_P) + " | run |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(FAST_P) + "---:|"]
    for level, s in summary.items():
        fast = " | ".join(f"{_fmt(s[f'fast_{p:g}_eager'], '.0%')} / {_fmt(s[f'fast_{p:g}_compile'], '.0%')}"
                          for p in FAST_P)
        reached = s["run"] + s["unsupported"]
        lines.append(f"| {level} | {s['covered']}/{reached} of {s['problems']} ({_fmt(s['coverage'], '.0%')}) | "
                     f"{s['correct']} ({_fmt(s['correct_of_covered'], '.0%')}) | {_fmt(s['geomean_eager'])} | "
                     f"{_fmt(s['geomean_compile'])} | {fast} | {s['run']} |")
    lines += ["", "| family | with a candidate | correct | geomean x eager | geomean x torch.compile |",
              "|---|---:|---:|---:|---:|"]
    for family, s in family_summaries(rows).items():
        lines.append(f"| {family} | {s['covered']} | {s['correct']} | {_fmt(s['geomean_eager'])} | "
                     f"{_fmt(s['geomean_compile'])} |")
    lines += ["", "| problem | status | x eager | x torch.compile | steps | moves (* best) |",
              "|---|---|---:|---:|---:|---|"]
    for r in rows:
        moves = ", ".join(m + ("*" if m == r["best_move"] else "") for m in r["moves"]) or "-"
        lines.append(f"| {r['problem']} | {r['status']} | {_fmt(r['speedup_eager'])} | "
                     f"{_fmt(r['speedup_compile'])} | {r['steps']} | {moves} |")
    lines += [f"| {pid} | not reached | - | - | - | - |" for pid in not_reached]
    lines += [f"| {pid} | unsupported | - | - | - | {why[:120].replace('|', '/')} |" for pid, why in refused.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", default=os.environ.get("HTAM_KERNELBENCH"), help="KernelBench checkout")
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--problems", help="level/number list, e.g. 1/19,2/12 (default: every file)")
    ap.add_argument("--limit", type=int, help="the first N files of each level")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default="triton")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--samples", type=int, default=1, help="settings of one move evaluated per step")
    ap.add_argument("--jobs", type=int, help="problems in flight (default: one per core, at most 16)")
    ap.add_argument("--workers", type=int, help="worker pool size (default: jobs x samples, at most one per core)")
    ap.add_argument("--trials", type=int, help="timed trials per evaluation (default: htam's)")
    ap.add_argument("--direct", action="store_true",
                    help="measure candidates and baselines directly, KernelBench's way (experiment/direct.py), "
                         "not through the judge")
    ap.add_argument("--deadline", type=float, default=480.0,
                    help="seconds from the start, planning included; what finished by then is reported")
    ap.add_argument("--order", choices=("stratified", "numbered"), default="stratified",
                    help="stratified: every prefix a proportional sample of the (level, family) strata; "
                         "numbered: level 1 and 2 interleaved by problem number")
    ap.add_argument("--first", help="level/number list run before the rest, in this order (e.g. the problems "
                                    "an earlier table lost on: 1/40,1/100,2/12)")
    ap.add_argument("--max-elems", type=int, help="shrink inputs to this many elements (default on the CPU: 4096)")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
    if not args.kb:
        print("kb_table: set HTAM_KERNELBENCH or pass --kb (a KernelBench checkout)", file=sys.stderr)
        return 2

    from htam_engine.loop.batch import Batch, BatchSpec
    from htam_engine.loop.setup import pool_size

    t0 = time.time()
    levels = [int(x) for x in args.levels.split(",")]
    picks = set(args.problems.split(",")) if args.problems else None
    max_elems = args.max_elems or (4096 if args.device == "cpu" else None)
    files = kernelbench_files(args.kb, levels, picks, args.limit)
    problems, refused = load(files, args.device, args.backend, max_elems)
    print(f"{len(files)} files: {len(problems)} planned on {args.backend}, {len(refused)} unsupported "
          f"({time.time() - t0:.0f} s)", flush=True)
    if args.order == "stratified":
        problems = stratified_order(problems)
    if args.first:
        rank = {pick: i for i, pick in enumerate(args.first.split(","))}
        problems.sort(key=lambda p: rank.get(_pick_of(p.id), len(rank)))  # stable: the rest keep their order
    out = Path(args.out) / "kb_table" if args.out else Path(tempfile.mkdtemp(prefix="htam-kb-table-"))
    jobs = args.jobs or max(1, min(16, os.cpu_count() or 1))
    if args.direct:
        from htam_engine.experiment.direct import pool_size as direct_pool_size

        workers = args.workers or direct_pool_size(args.device)
    else:
        workers = args.workers or pool_size(args.samples * jobs, args.device)
    spec = BatchSpec(suites=[], out=str(out), steps=args.steps, samples=args.samples, device=args.device,
                     backend=args.backend, proposer="offline", jobs=jobs, workers=workers, trials=args.trials)
    batch = Batch(spec)

    written = {"at": time.time()}

    def on_done(d: Any) -> None:
        row = d.row or {}
        print(f"[{d.index}/{d.total}] {d.problem}: {d.error or row.get('status')} "
              f"eager {_fmt(row.get('speedup_eager'))} compile {_fmt(row.get('speedup_compile'))} "
              f"({time.time() - t0:.0f} s)", flush=True)
        if args.out and time.time() - written["at"] > PARTIAL_EVERY_S:
            # a table so far, so a run killed from outside still leaves one behind
            report(args, levels, problems, refused, batch.write_results(problems), out, jobs, t0, quiet=True)
            written["at"] = time.time()

    async def bounded() -> tuple[dict[str, Any], bool]:
        """The batch's results, and whether it ended by itself. At the deadline the results are
        read from the session files as they are: waiting for the in-flight evaluations to wind
        down (the pool's close) took longer than the margin a caller leaves after the deadline."""
        if not problems:
            return {"rows": [], "unfinished": []}, True
        pool = None
        if args.direct:
            from htam_engine.experiment.direct import DirectPool

            pool = DirectPool(workers, args.device, compile_baseline=True)
        task = asyncio.ensure_future(batch.run(problems, on_done=on_done, pool=pool))
        done, _ = await asyncio.wait({task}, timeout=max(1.0, args.deadline - (time.time() - t0)))
        if task in done:
            return task.result(), True
        print(f"deadline of {args.deadline:.0f} s reached ({time.time() - t0:.0f} s): reporting what finished",
              flush=True)
        return batch.write_results(problems), False

    loop = asyncio.new_event_loop()
    doc, ended = loop.run_until_complete(bounded())
    report(args, levels, problems, refused, doc, out, jobs, t0)
    if not ended:
        # the workers and their judges still hold the device; the next bench needs it
        stop_descendants()
        os._exit(0)
    loop.close()
    return 0


# While a run lasts, the table so far is rewritten at most this often (seconds).
PARTIAL_EVERY_S = 30.0


def report(args: Any, levels: list[int], problems: list[Any], refused: dict[str, str], doc: dict[str, Any],
           out: Path, jobs: int, t0: float, quiet: bool = False) -> None:
    """kb_table.md / kb_table.json (with --out) from a batch's results, and the table printed."""
    cut = set(doc.get("unfinished", []))
    rows = []
    for r in doc["rows"]:
        if r["problem"] in cut and not r["steps"]:
            continue  # started but cut off before its first step: not reached
        moves, best = moves_of(str(out / r["session"]))
        rows.append({**r, "moves": moves, "best_move": best})
    by_id = {p.id: p for p in problems}
    level_of = {**{pid: by_id[pid].level for pid in by_id}, **{pid: _level_from(pid) for pid in refused}}
    summary = level_summaries(rows, level_of, refused, levels)
    started = {r["problem"] for r in rows}
    not_reached = [p.id for p in problems if p.id not in started]
    unfinished = [pid for pid in doc.get("unfinished", []) if pid in started]
    wall = time.time() - t0
    trials = f"{args.trials} timed trials" if args.trials else "htam's default timed trials"
    if args.direct:
        from htam_engine.experiment.direct import NAME

        trials += f"; evaluator: {NAME}"
    header = (f"KernelBench levels {args.levels}, {args.backend} on {args.device}, offline proposer, at most "
              f"{args.steps} steps, {args.samples} sample(s), {trials}, {jobs} in flight; wall {wall:.0f} s of a "
              f"{args.deadline:.0f} s deadline; {len(unfinished)} cut off mid-run (their steps so far count), "
              f"{len(not_reached)} not reached")
    table = markdown_table(rows, refused, not_reached, summary, header)
    record = {"settings": vars(args), "summary": summary, "rows": rows, "unsupported": refused,
              "cut_off": unfinished, "not_reached": not_reached, "wall_s": round(wall, 1)}
    if not quiet:
        print("\n" + table, flush=True)
        print(f"sessions in {out}")
    if args.out:
        from htam_engine.storage import atomic_write_text

        atomic_write_text(Path(args.out) / "kb_table.json", json.dumps(record, indent=1, default=str))
        atomic_write_text(Path(args.out) / "kb_table.md", table)
        if not quiet:
            print(f"table in {Path(args.out) / 'kb_table.md'} and {Path(args.out) / 'kb_table.json'}")


def stop_descendants() -> None:
    """Kill this process's children and theirs (the worker pool, judges, sandboxes)."""
    import psutil

    family = psutil.Process().children(recursive=True)
    for child in family:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(family, timeout=10)


def _pick_of(problem_id: str) -> str:
    """The level/number a --problems or --first list names a problem by ('kernelbench:level1/19_ReLU' -> 1/19)."""
    return f"{_level_from(problem_id)}/{problem_id.rsplit('/', 1)[-1].split('_')[0]}"


def _level_from(problem_id: str) -> int | None:
    """The level a problem id names ('kernelbench:level1/19_ReLU' -> 1), for files refused unloaded."""
    found = re.search(r"level(\d+)/", problem_id.replace("\\", "/"))
    return int(found.group(1)) if found else None


if __name__ == "__main__":
    sys.exit(main())
