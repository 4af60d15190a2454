"""`htam` entry point: the app by default, headless subcommands otherwise.

Errors are handled here, in one place: a `UsageError` or a bad input file exits 2
with one line on stderr, anything else exits 1 with one line (set HTAM_DEBUG=1
for the traceback). `--json` commands print exactly one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Callable, Sequence

from htam_engine.errors import InputError, UsageError, exit_code_for

# subcommand name -> module under htam_engine.cli that defines register(subparsers)
SUBCOMMANDS: dict[str, str] = {
    "problems": "problems_cmd",
    "eval": "eval_cmd",
    "run": "run_cmd",
    "batch": "batch_cmd",
    "sessions": "sessions_cmd",
    "memory": "memory_cmd",
    "compare": "compare_cmd",
    "verify": "verify_cmd",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit 2 with usage; keep it one line
        raise UsageError(message, prog=self.prog)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="htam", description="Turn PyTorch operators into faster, verified kernels.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name, module in SUBCOMMANDS.items():
        try:
            mod = importlib.import_module(f"htam_engine.cli.{module}")
        except ModuleNotFoundError as exc:  # a subcommand not built yet stays out of the parser
            if exc.name and exc.name.endswith(module):
                continue
            raise
        mod.register(sub)
    return parser


def build_app_parser() -> argparse.ArgumentParser:
    from htam_engine.cli import app_cmd

    parser = _Parser(prog="htam", description="Open the htam app (subcommands: " + ", ".join(SUBCOMMANDS) + ").")
    app_cmd.add_arguments(parser)
    return parser


def _run(argv: Sequence[str]) -> int:
    from htam_engine import settings

    settings.check()  # a typo in a config file is said before anything runs
    if argv and argv[0] in SUBCOMMANDS:
        args = build_parser().parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return int(handler(args) or 0)
    if argv and argv[0] in ("-h", "--help") and len(argv) == 1:
        build_parser().print_help()
        print("\nWith no subcommand: htam [PROBLEM] [run options] | htam --resume SESSION opens the app.")
        return 0
    from htam_engine.cli import app_cmd

    args = build_app_parser().parse_args(argv)
    return int(app_cmd.handle(args) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(argv)
    except UsageError as exc:
        print(f"{exc.prog or 'htam'}: {one_line(str(exc))}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        print("htam: interrupted", file=sys.stderr)
        code = 130
    except Exception as exc:  # noqa: BLE001 - the one place that turns faults into exit codes
        if _debug():
            raise
        code = exit_code_for(exc)
        print(f"htam: {one_line(str(exc))}" if str(exc) else f"htam: {type(exc).__name__}", file=sys.stderr)
    return code


def _debug() -> bool:
    from htam_engine import settings

    try:
        return settings.debug()
    except InputError:  # a broken config file is the error being reported
        return bool(os.environ.get("HTAM_DEBUG"))


def entry() -> None:
    """The `htam` program: `main()`, then the process ends at once. By then every file is
    written (atomically) and every worker stopped; what is left is the interpreter taking
    torch's and Triton's libraries down, measured at 2.5 s after the app had quit."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def one_line(text: str) -> str:
    """An error message as one line, even when it quotes input holding line breaks."""
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def print_json(doc: Any) -> None:
    """The single JSON document a --json command prints."""
    json.dump(_finite(doc), sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


def _finite(doc: Any) -> Any:
    """JSON has no NaN or infinity: such numbers print as null."""
    if isinstance(doc, float):
        return doc if doc == doc and doc not in (float("inf"), float("-inf")) else None
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite(v) for v in doc]
    return doc
