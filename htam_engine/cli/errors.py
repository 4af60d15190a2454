"""Exceptions the CLI maps to exit status 2 (bad usage or unreadable input)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad command-line usage: exit 2."""


class InputError(Exception):
    """An input file that cannot be read or parsed: exit 2. str() names the file."""


def exit_code_for(exc: BaseException) -> int:
    from htam_engine.problems.model import ProblemError

    if isinstance(exc, (UsageError, InputError, ProblemError)):
        return 2
    # Session and memory-bank file faults raise subclasses of InputError.
    return 1
