"""What the command line says when something is wrong: one line, named once, the right exit code."""

from __future__ import annotations

from htam_engine.cli import main


def test_argument_errors_name_the_command_once(capsys):
    assert main(["sessions", "branch", "x.htam"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "htam sessions branch: the following arguments are required: --at"
