"""The error types every layer raises and the command line maps to exit codes.

The ground floor: this module imports nothing from htam, so any part (problems, memory,
sessions, evaluation, the loop, the app) can raise these without importing upward.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad usage (a flag, a command, a value a person chose): exit 2.

    `prog` names the command whose arguments were wrong (set by the argument parser), so
    the message is printed once under that name."""

    def __init__(self, message: str = "", *, prog: str = "") -> None:
        super().__init__(message)
        self.prog = prog


class InputError(Exception):
    """An input file that cannot be read or parsed: exit 2. str() names the file."""


class EnvironmentFault(UsageError):
    """The machine lacks what the command asked for (a CUDA GPU, a toolchain): exit 2."""


def exit_code_for(exc: BaseException) -> int:
    """2 for bad usage or unreadable input (problem, session and bank files raise InputError
    subclasses), 1 for anything else."""
    return 2 if isinstance(exc, (UsageError, InputError)) else 1
