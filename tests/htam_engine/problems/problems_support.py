"""Shared helpers for the problem tests (imported by name: a conftest here could clash with others)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

GOOD = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.w = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return x * self.w

batch_size = 8
features = 16

def get_inputs():
    return [torch.randn(batch_size, features)]

def get_init_inputs():
    return [features]
"""

@pytest.fixture
def write_problem(tmp_path: Path):
    def write(source: str, name: str = "problem.py") -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return str(path)

    return write


@pytest.fixture
def problems_cli():
    """Run `htam problems ARGS` in-process with the dispatcher's error handling; return exit status.

    Only the problems subcommand is registered, so these tests do not depend on the
    other subcommands importing cleanly.
    """
    from htam_engine.cli import _Parser
    from htam_engine.cli import problems_cmd
    from htam_engine.errors import exit_code_for

    def run(argv: list[str]) -> int:
        parser = _Parser(prog="htam")
        problems_cmd.register(parser.add_subparsers(dest="command", parser_class=_Parser))
        try:
            args = parser.parse_args(["problems", *argv])
            return int(args.handler(args) or 0)
        except Exception as exc:  # the dispatcher's mapping of faults to exit codes
            print(f"htam: {exc}")
            return exit_code_for(exc)

    return run
