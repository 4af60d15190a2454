"""`htam batch SUITE...`: one headless session per problem, resumable, with results and a report.

SUITE is `builtin` (the built-in suite), a folder (e.g. a KernelBench checkout), problem
files, or a text file listing paths. Progress (with an ETA) goes to standard error;
results land in --out: results.json, results.csv, report.md, sessions/.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from htam_engine.errors import UsageError
from htam_engine.loop.engine import ABLATIONS
from htam_engine.propose.config import add_model_arguments


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("batch", help="run a suite of problems headless (resumable)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("suite", nargs="+", help="builtin, a folder, problem files, or a file listing paths")
    p.add_argument("--levels", help="only these levels, e.g. 1,2")
    p.add_argument("--steps", type=int, default=3, help="steps per problem (default 3)")
    p.add_argument("--samples", type=int, default=1, help="candidates per step (default 1)")
    p.add_argument("--out", default="batch-out", help="output folder (default ./batch-out); rerun to resume")
    p.add_argument("--ablation", choices=list(ABLATIONS), help="run with one component removed")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda on a machine with a GPU, else cpu)")
    p.add_argument("--backend", choices=["cpp", "cuda", "triton"], help="default: cuda on a GPU, cpp on the CPU")
    p.add_argument("--proposer", choices=["offline", "model"], help="default: model when an endpoint is configured")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, help="at most this many problems")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a module-level constant in every problem that has it")
    p.add_argument("--workers", type=int, help="evaluation worker processes (default: samples x jobs, at most the cores; "
                                                 "on a GPU at most as many judges as half its memory holds)")
    p.add_argument("--jobs", type=int, default=1, help="problems in flight at once (default 1)")
    p.add_argument("--trials", type=int, help="timed trials per evaluation (harness default 30)")
    p.add_argument("--timeout", type=float, help="seconds allowed per evaluation, compile included")
    p.add_argument("--no-compile-baseline", action="store_true", help="do not time the torch.compile baseline")
    p.add_argument("--verify", action="store_true",
                   help="afterwards, re-run every best kernel through KernelBench's own evaluation (htam verify; "
                        "CUDA only) and add the side-by-side table to the report")
    p.add_argument("--kernelbench", metavar="PATH", help="the KernelBench checkout for --verify (default: $HTAM_KERNELBENCH)")
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print results.json's content as one JSON document")
    p.set_defaults(handler=handle)


def parse_levels(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--levels wants numbers like 1,2 (got {text!r})") from None
    return levels or None


def spec_from_args(args: argparse.Namespace) -> Any:
    from htam_engine.cli.run_cmd import model_settings_from_args
    from htam_engine.loop.batch import BatchSpec
    from htam_engine.loop.setup import check_backend, check_device, default_backend, default_device, require_machine
    from htam_engine.problems import parse_overrides

    for name in ("steps", "samples", "jobs", "limit", "workers", "trials"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "steps" else 1):
            raise UsageError(f"--{name} must be {'>= 0' if name == 'steps' else '>= 1'}")
    device = check_device(args.device or default_device())
    backend = check_backend(args.backend or default_backend(device))
    require_machine(device, backend)
    return BatchSpec(
        suites=list(args.suite), out=args.out, steps=args.steps, samples=args.samples,
        levels=parse_levels(args.levels), ablation=args.ablation, device=device,
        backend=backend, proposer=args.proposer,
        seed=args.seed, limit=args.limit, overrides=parse_overrides(args.overrides),
        workers=args.workers, jobs=args.jobs, trials=args.trials, timeout_s=args.timeout,
        compile_baseline=not args.no_compile_baseline, model_settings=model_settings_from_args(args),
    )


def handle(args: argparse.Namespace) -> int:
    from htam_engine.loop.batch import Batch
    from htam_engine.loop.suite import load_suite

    spec = spec_from_args(args)
    checkout = verify_preflight(args, spec.device)
    suite = load_suite(spec.suites, device=spec.device, levels=set(spec.levels) if spec.levels else None,
                       limit=spec.limit, overrides=spec.overrides)
    for fault in suite.broken:
        print(f"htam: skipped {fault}", file=sys.stderr)
    if not suite.problems:
        raise UsageError("no problems to run" + (" (every file failed to load)" if suite.broken else ""))
    batch = Batch(spec)
    batch.broken = [str(b) for b in suite.broken]
    progress = make_progress(len(suite.problems))
    progress.start()
    try:
        doc = asyncio.run(batch.run(suite.problems, on_done=progress.update))
    finally:
        progress.stop()
    if checkout is not None:
        doc = verify_exports(batch, suite.problems, checkout)
    if args.json:
        from htam_engine.cli import print_json

        print_json(doc)
    else:
        from htam_engine.loop.report import metric_lines

        for label, value in metric_lines(doc["metrics"]):
            print(f"{label:52} {value}")
        print(f"report: {batch.out / 'report.md'}")
    return 0


def verify_preflight(args: argparse.Namespace, device: str) -> Any:
    """The KernelBench checkout for --verify (None without it), checked before the batch runs."""
    if not args.verify:
        return None
    from htam_engine.verify.checkout import find_checkout
    from htam_engine.verify.kernelbench import cuda_device

    checkout = find_checkout(args.kernelbench)
    cuda_device(device)
    return checkout


def verify_exports(batch: Any, problems: list[Any], checkout: Any) -> dict[str, Any]:
    """`--verify`: the batch's bests through KernelBench and htam, one line each on stderr."""
    from htam_engine.verify.exports import verify_batch
    from htam_engine.verify.report import gap_text, summary_lines

    def line(i: int, n: int, v: Any) -> None:
        print(f"[verify {i}/{n}] {v.problem}: htam {v.htam.status.value}, KernelBench {v.kernelbench.status}, "
              f"gap {gap_text(v.speedup_gap)}", file=sys.stderr, flush=True)

    doc = verify_batch(batch, problems, checkout, on_done=line)
    for text in summary_lines(batch.verification.verifications):
        print(f"verify: {text}", file=sys.stderr)
    return doc


class PlainProgress:
    """One line per finished problem with an ETA (logs, CI)."""

    def __init__(self, total: int):
        self.total = total
        self.t0 = time.monotonic()
        self.run = 0

    def start(self) -> None:
        pass

    def eta(self, index: int) -> str:
        if not self.run:
            return "?"
        per = (time.monotonic() - self.t0) / self.run
        left = per * (self.total - index)
        return f"{left / 60:.1f} min" if left >= 60 else f"{left:.0f} s"

    def line(self, done: Any) -> str:
        from htam_engine.loop.console import fmt_speedup, plural

        if done.error:
            what = f"failed: {done.error}"
        elif done.row is None:
            what = "no result"
        else:
            r = done.row
            what = f"{r['status']} {fmt_speedup(r['speedup_eager'])} in {plural(r['steps'], 'step')}"
            what += f" ({r['note']})" if r.get("note") and not r["correct"] else ""
            what += " (already done)" if done.skipped else ""
        return f"[{done.index}/{done.total}] {done.problem}: {what}; ETA {self.eta(done.index)}"

    def update(self, done: Any) -> None:
        if not done.skipped:
            self.run += 1
        print(self.line(done), file=sys.stderr, flush=True)

    def stop(self) -> None:
        pass


class RichProgress(PlainProgress):
    """A progress bar with the ETA rich computes, and the per-problem lines above it."""

    def __init__(self, total: int):
        super().__init__(total)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.console = Console(file=sys.stderr, highlight=False)
        self.bar = Progress(TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
                            TimeRemainingColumn(), console=self.console)
        self.task = self.bar.add_task("batch", total=total)

    def start(self) -> None:
        self.bar.start()

    def update(self, done: Any) -> None:
        if not done.skipped:
            self.run += 1
        self.console.print(self.line(done))
        self.bar.advance(self.task)

    def stop(self) -> None:
        self.bar.stop()


def make_progress(total: int) -> PlainProgress:
    return RichProgress(total) if sys.stderr.isatty() else PlainProgress(total)
