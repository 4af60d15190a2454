"""`htam [PROBLEM] [run options]` and `htam --resume SESSION`: the terminal app.

Builds the engine the same way `htam run` does (offline proposer on the built-in demo
problem when nothing else is given or configured), then opens the app, importing the
UI package only here so the engine never depends on it.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from htam_engine.cli.run_cmd import add_run_options, spec_from_args

APP_POLICY = "ask"  # a person is watching: ask before evaluating unless told otherwise


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", nargs="?", help="a problem file or a built-in name (default: the demo problem)")
    parser.add_argument("--resume", metavar="SESSION", help="open the app on a session and continue it")
    add_run_options(parser)


def app_spec(args: argparse.Namespace) -> Any:
    from htam_engine.problems import DEMO_PROBLEM

    spec = spec_from_args(args)
    if spec.resume is None:
        spec = dataclasses.replace(spec, problem=spec.problem or DEMO_PROBLEM, policy=spec.policy or APP_POLICY)
    return spec


def handle(args: argparse.Namespace) -> int:
    from htam_engine.loop.setup import open_engine, resume_spec
    from htam_engine.propose.config import load_config
    from htam_engine.session import sessions_dir

    from htam_tui.app import HtamApp, UiSettings

    spec = app_spec(args)
    config = load_config()  # [ui] settings and [keys] remapping; bad ones exit 2 before anything starts
    settings = UiSettings.from_config(config.ui)
    engine = open_engine(spec, interactive=True, hold_open=True)

    def resume_engine(path: Path) -> Any:
        return open_engine(resume_spec(path, spec), interactive=True, hold_open=True)

    app = HtamApp(engine, sessions_dir=Path(sessions_dir()), settings=settings,
                  keymap=config.keys, engine_factory=resume_engine)
    code = app.run()
    return int(code or 0)
