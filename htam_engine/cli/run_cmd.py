"""`htam run PROBLEM [options]` and `htam run --resume SESSION`: one headless session.

Progress goes to standard error (rich on a terminal, plain lines otherwise); then the
best candidate's result (or, with --json, the session summary) goes to standard output.
`add_run_options` and `spec_from_args` are shared with the app's command line.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from htam_engine.errors import UsageError
from htam_engine.loop.approval import POLICIES
from htam_engine.loop.engine import ABLATIONS
from htam_engine.loop.setup import RunSpec
from htam_engine.propose.config import add_model_arguments

# Policies that ask a person on some candidates; headless they need a terminal.
PROMPTING_POLICIES = ("ask", "ask-on-change")


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, help="steps this invocation runs (default 6; on --resume: the rest of the plan)")
    p.add_argument("--samples", type=int, help="candidates per step, generated and evaluated concurrently (default 1)")
    p.add_argument("--backend", choices=["cpp", "cuda", "triton"], help="kernel language (default: cuda on a GPU, cpp on the CPU)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda on a machine with a GPU, else cpu)")
    p.add_argument("--proposer", choices=["offline", "model"], help="default: model when an endpoint is configured")
    p.add_argument("--policy", choices=list(POLICIES), help="approval policy (default auto)")
    p.add_argument("--session", metavar="FILE", help="session file to write (default sessions/<problem>-<time>.htam)")
    p.add_argument("--seed", type=int, help="seed of direction sampling and proposals (default 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a module-level constant of the problem (repeatable)")
    p.add_argument("--ablation", choices=list(ABLATIONS), help="run with one component removed")
    p.add_argument("--token-budget", type=int, help="stop once this many model tokens are used")
    p.add_argument("--cost-budget", type=float, help="stop once this many US dollars are spent")
    p.add_argument("--target", dest="target_speedup", type=float, help="stop once the best speedup reaches this")
    p.add_argument("--bank", help="memory bank file (default sessions/memory.htgbank or $HTAM_BANK)")
    p.add_argument("--no-bank", action="store_true", help="start from the seed memory and merge nothing back")
    p.add_argument("--workers", type=int, help="evaluation worker processes (default: samples, at most the CPU cores; "
                                                 "on a GPU at most as many judges as half its memory holds)")
    p.add_argument("--trials", type=int, help="timed trials per evaluation (harness default 30)")
    p.add_argument("--timeout", type=float, help="seconds allowed per evaluation, compile included")
    p.add_argument("--no-compile-baseline", action="store_true", help="do not time the torch.compile baseline")
    add_model_arguments(p)


def model_settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """ModelSettings field -> value for the model flags that were given."""
    from htam_engine.propose.config import CLI_FLAGS

    return {fld: getattr(args, dest) for dest, (_f, fld, _t, _h) in CLI_FLAGS.items()
            if getattr(args, dest, None) is not None}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("run", help="run one optimization session headless",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("problem", nargs="?", help="a problem file or a built-in name")
    p.add_argument("--resume", metavar="SESSION", help="continue a session file")
    add_run_options(p)
    p.add_argument("--json", action="store_true", help="print the session summary as one JSON document")
    p.set_defaults(handler=handle)


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    from htam_engine.problems import parse_overrides

    if getattr(args, "resume", None) and getattr(args, "problem", None):
        raise UsageError("give either PROBLEM or --resume SESSION, not both")
    if args.steps is not None and args.steps < 0:
        raise UsageError("--steps must be >= 0")
    if args.samples is not None and args.samples < 1:
        raise UsageError("--samples must be >= 1")
    for name in ("workers", "trials"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise UsageError(f"--{name} must be >= 1")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be > 0")
    return RunSpec(
        problem=getattr(args, "problem", None), resume=getattr(args, "resume", None), steps=args.steps,
        samples=args.samples, backend=args.backend, device=args.device, proposer=args.proposer,
        policy=args.policy, session=args.session, seed=args.seed, overrides=parse_overrides(args.overrides),
        ablation=args.ablation, token_budget=args.token_budget, cost_budget=args.cost_budget,
        target_speedup=args.target_speedup, bank="" if args.no_bank else args.bank, workers=args.workers,
        trials=args.trials, timeout_s=args.timeout, compile_baseline=not args.no_compile_baseline,
        model_settings=model_settings_from_args(args),
    )


def handle(args: argparse.Namespace) -> int:
    from htam_engine.loop.setup import open_engine

    spec = spec_from_args(args)
    tty = sys.stdin.isatty()
    if spec.policy in PROMPTING_POLICIES and not tty:
        raise UsageError(f"--policy {spec.policy} asks a person, but standard input is not a terminal; "
                         "use --policy auto or auto-static, or the app")
    engine = open_engine(spec, interactive=tty)
    if engine.policy in PROMPTING_POLICIES and not tty:
        asyncio.run(engine.aclose())
        raise UsageError(f"the session's policy {engine.policy} asks a person, but standard input is not a "
                         "terminal; resume with --policy auto")
    session = asyncio.run(_drive(engine, prompt=tty))
    if args.json:
        from htam_engine.cli import print_json
        from htam_engine.session import summarize

        print_json(summarize(session, engine.session_path))
    else:
        print(best_line(session, engine))
    return 0


async def _drive(engine: Any, *, prompt: bool) -> Any:
    from htam_engine.loop.console import TerminalPrompter, follow, make_reporter

    sub = engine.events()
    prompter = TerminalPrompter(engine) if prompt else None
    consumer = asyncio.create_task(follow(engine, sub, make_reporter(), prompter))
    try:
        return await engine.run()
    finally:
        try:
            await asyncio.wait_for(consumer, 5)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            consumer.cancel()
        await engine.aclose()


def best_line(session: Any, engine: Any) -> str:
    from htam_engine.loop.console import describe_result, plural

    where = f"session {engine.session_path}" if engine.session_path else "session not saved"
    if session.best_result is None:
        return (f"{session.problem.id}: no correct candidate in {plural(len(session.steps), 'step')} "
                f"({engine.finish_reason}); {where}")
    return (f"{session.problem.id}: best at step {session.best_step}: {describe_result(session.best_result)}; "
            f"{where}")
