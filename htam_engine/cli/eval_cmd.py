"""`htam eval PROBLEM CANDIDATE`: evaluate one candidate file against a problem.

Exit 0 whenever the evaluation ran (an incorrect or rejected candidate is a result),
2 for bad usage or unreadable input files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError, UsageError
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import EvalResult, Status

_STATUS_STYLE = {
    Status.OK: "bold green",
    Status.INCORRECT: "bold yellow",
    Status.COMPILE_ERROR: "bold red",
    Status.RUNTIME_ERROR: "bold red",
    Status.TIMEOUT: "bold red",
    Status.REJECTED: "bold magenta",
    Status.HARNESS_ERROR: "bold blue",  # the machine's fault, not the candidate's
}


def _positive(kind: type, what: str) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be positive, got {text!r}")
        return value

    return parse


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a candidate kernel against a problem",
        description="Compile, check and time CANDIDATE (a module defining ModelNew) against PROBLEM "
        "(a KernelBench-format file or a built-in name). Exit 0 when the evaluation ran, "
        "whatever its verdict; 2 for bad usage or unreadable files.",
    )
    p.add_argument("problem", metavar="PROBLEM")
    p.add_argument("candidate", metavar="CANDIDATE")
    p.add_argument("--backend", choices=["cpp", "cuda", "triton"], help="default: detected from the source")
    p.add_argument("--device", default=None, help="cpu or cuda[:N] (default: cuda on a machine with a GPU, else cpu)")
    p.add_argument("--timeout", type=_positive(float, "--timeout"), default=None, metavar="S",
                   help="seconds for the whole evaluation, compile included (default 300)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                   help="override a module-level constant of the problem (repeatable)")
    p.add_argument("--trials", type=_positive(int, "--trials"), default=None, metavar="N", help="timed trials (default 30)")
    p.add_argument("--no-compile-baseline", action="store_true", help="skip the torch.compile baseline")
    p.add_argument("--memory-mb", type=_positive(int, "--memory-mb"), default=None, metavar="MB",
                   help="memory ceiling for the worker process tree")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=run)


def _device(text: str | None) -> str:
    from htam_engine.loop.setup import default_device

    device = (text or default_device()).strip().lower()
    if device == "cpu":
        return device
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        import torch

        if not torch.cuda.is_available():
            raise UsageError(f"--device {device}: no CUDA GPU is visible on this machine")
        return device
    raise UsageError(f"--device must be cpu, cuda or cuda:N, got {text!r}")


def run(args: argparse.Namespace) -> int:
    from htam_engine.evaluate.evaluator import Evaluator
    from htam_engine.problems import load_problem, parse_overrides

    device = _device(args.device)
    path = Path(args.candidate)
    try:
        code = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read candidate ({getattr(exc, 'strerror', None) or exc})") from None
    overrides = parse_overrides(args.overrides)
    problem = load_problem(args.problem, overrides or None, device=device)
    config = EvalConfig(backend=args.backend, device=device, overrides=overrides,
                        time_compile_baseline=not args.no_compile_baseline, memory_limit_mb=args.memory_mb)
    if args.timeout is not None:
        config.timeout_s = args.timeout
    if args.trials is not None:
        config.trials = args.trials
    ev = Evaluator(device)
    try:
        result = ev.evaluate(problem, code, config, on_progress=_progress_printer())
    finally:
        ev.close()
    if args.json:
        from htam_engine.cli import print_json

        print_json(result.to_dict())
    else:
        _print_human(problem.id, str(path), result)
    return 0


def _progress_printer() -> Any:
    """Stage changes on stderr, one line each (the JSON on stdout stays clean)."""
    seen: list[str] = []

    def show(stage: str, timings: list[float]) -> None:
        if stage != (seen[-1] if seen else None) and stage != "done":
            seen.append(stage)
            print(f"htam eval: {stage}...", file=sys.stderr, flush=True)

    return show


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g} ms"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}×"


def _print_human(problem_id: str, candidate: str, r: EvalResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{candidate}[/] on [bold]{problem_id}[/] ({r.backend}, {r.device}): "
                  f"[{_STATUS_STYLE.get(r.status, 'bold')}]{r.status.value}[/]")
    if r.diagnostics.message:
        console.print(f"  {r.diagnostics.message}", markup=False)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("runtime", _ms(r.runtime_ms))
    table.add_row("eager reference", _ms(r.ref_runtime_ms))
    table.add_row("torch.compile reference", _ms(r.compile_ref_runtime_ms))
    table.add_row("speedup vs eager", _x(r.speedup_eager))
    table.add_row("speedup vs torch.compile", _x(r.speedup_compile))
    s = r.stages
    cached = " (cached)" if s.compile_cached else ""
    table.add_row("stages", f"static {s.static_s:.2f}s, compile {s.compile_s:.2f}s{cached}, "
                            f"check {s.check_s:.2f}s, time {s.time_s:.2f}s, total {s.total_s:.2f}s")
    if r.timings:
        table.add_row("trials", f"{len(r.timings)} (min {min(r.timings):.4g} ms, max {max(r.timings):.4g} ms)")
    console.print(table)
    for m in r.diagnostics.compiler[:10]:
        where = ":".join(str(x) for x in (m.file, m.line, m.column) if x is not None)
        console.print(f"  {m.severity}: {where + ': ' if where else ''}{m.message}", markup=False)
    mm = r.diagnostics.mismatch
    if mm is not None:
        console.print(f"  mismatch on {mm.input_set or 'inputs'}: max abs {mm.max_abs_error:.3g}, max rel "
                      f"{mm.max_rel_error:.3g} at {mm.where}; shapes {mm.expected_shape} vs {mm.actual_shape}, "
                      f"dtypes {mm.expected_dtype} vs {mm.actual_dtype} {mm.note}", markup=False)
    for f in r.integrity:
        console.print(f"  integrity [{f.severity}] {f.rule}: {f.message}", markup=False)
    if r.status is not Status.OK and r.diagnostics.log:
        console.print("  log (tail):", style="dim")
        console.print("\n".join("    " + ln for ln in r.diagnostics.log.splitlines()[-20:]), markup=False, style="dim")
