"""`htam verify SOLUTION PROBLEM`: an exported solution judged by KernelBench's own
eval_kernel_against_ref (from a checkout) and by htam, verdicts and speedups side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError
from htam_engine.verify.checkout import CHECKOUT_ENV
from htam_engine.verify.settings import AGREEMENT, KernelBenchSettings

_DEFAULTS = KernelBenchSettings()


def settings_help() -> str:
    s = _DEFAULTS
    return (f"Both evaluations use KernelBench's choices: {s.correct_trials} correctness trials, {s.perf_trials} "
            f"timed trials, seed {s.seed}, {s.precision.value} (KernelBench casts every input to it; its problem "
            "files are fp32 as shipped, and htam runs them unchanged), the problem at the sizes its file states "
            f"(KernelBench's official sizes; no GPU_SIZES). KernelBench times with {s.timing_method.value} (L2 "
            "flushed before each trial, CUDA events on the current stream) and reports the mean; htam times with "
            "its own protocol (L2 flushed, all streams synchronized around each trial) and reports the median; "
            "neither times torch.compile. Each keeps its own "
            "correctness rules: KernelBench torch.allclose at its tolerance for the precision, htam its "
            f"tolerances and integrity checks. Speedups agree within {100 * AGREEMENT:g} %.")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "verify", help="re-run an exported solution through KernelBench's own evaluation, beside htam's",
        description="Judge an exported solution with KernelBench's own eval_kernel_against_ref (from a checkout) "
        f"and with htam, and show both verdicts and speedups side by side. {settings_help()} KernelBench runs in a child "
        "process (CUDA only). Exit 0 when both evaluations ran, whatever their verdicts; 2 for bad usage, "
        "unreadable files, no KernelBench checkout or no CUDA GPU.")
    p.add_argument("solution", metavar="SOLUTION", help="a module defining ModelNew (`htam sessions export` writes one)")
    p.add_argument("problem", metavar="PROBLEM", help="the KernelBench-format problem file (or a built-in name)")
    p.add_argument("--kernelbench", metavar="PATH", help=f"a KernelBench checkout (default: ${CHECKOUT_ENV})")
    p.add_argument("--device", default=None, help="cuda or cuda:N (default cuda)")
    p.add_argument("--timeout", type=float, default=_DEFAULTS.timeout_s, metavar="S",
                   help=f"seconds for each evaluation, compile included (default {_DEFAULTS.timeout_s:g})")
    p.add_argument("--json", action="store_true", help="print both verdicts as one JSON document")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from htam_engine.problems import load_problem
    from htam_engine.verify.checkout import find_checkout
    from htam_engine.verify.kernelbench import cuda_device
    from htam_engine.verify.side_by_side import verify_solution

    path = Path(args.solution)
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read solution ({getattr(exc, 'strerror', None) or exc})") from None
    problem = load_problem(args.problem)
    checkout = find_checkout(args.kernelbench)
    device = cuda_device(args.device)
    settings = dataclasses.replace(_DEFAULTS, timeout_s=args.timeout)
    v = verify_solution(str(path), code, problem, checkout, device, settings,
                        on_stage=lambda what: print(f"htam verify: {what}...", file=sys.stderr, flush=True))
    if args.json:
        from htam_engine.cli import print_json

        print_json(v.to_dict())
    else:
        print_side_by_side(v)
    return 0


def print_side_by_side(v: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from htam_engine.verify import report

    h, k = v.htam, v.kernelbench
    console = Console()
    console.print(f"[bold]{v.solution}[/] on [bold]{v.problem}[/] ({v.backend.value}, {v.device})")
    t = Table(box=None, pad_edge=False)
    for name in ("", "htam", "KernelBench"):
        t.add_column(name)
    cells = dict(zip(report.HEADERS, report.row(v)))
    t.add_row("verdict", cells["htam"], cells["KernelBench"])
    t.add_row("kernel ms", cells["htam ms"], cells["KB ms"])
    t.add_row("reference ms", cells["htam ref ms"], cells["KB ref ms"])
    t.add_row("speedup vs eager", cells["htam speedup"], cells["KB speedup"])
    if k.runtime_trials and k.ref_runtime_trials:  # KernelBench's mean beside its own trials' spread
        t.add_row("KernelBench's trials (ms)", "", f"kernel {report.trials_text(k.runtime_trials)}; "
                  f"reference {report.trials_text(k.ref_runtime_trials)}")
    console.print(t)
    console.print(f"speedup gap (htam - KernelBench) / KernelBench: {cells['gap']}; "
                  + ("they agree" if v.agrees else "they DISAGREE")
                  + (f" (against KernelBench's medians: {report.gap_text(v.median_gap)})" if v.median_gap is not None
                     else ""), markup=False, soft_wrap=True)
    if h.diagnostics.message:
        console.print(f"  htam: {h.diagnostics.message}", markup=False)
    if k.error:
        console.print(f"  KernelBench gave no verdict: {k.error}", markup=False)
        if k.log_tail:
            console.print("\n".join("    " + ln for ln in k.log_tail.splitlines()[-10:]), markup=False, style="dim")
    elif not k.correct:
        issue = {key: k.metadata[key] for key in k.metadata if key != "double_called_with"}
        console.print(f"  KernelBench: {issue}", markup=False)
