"""Runs check_candidate in-process on a problem from problems/ and a candidate file from here.

The guards patch process-wide functions, and some cheats patch `time` and `torch.cuda`
themselves: everything is put back after each check so other tests see a clean process.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels run on the CPU (CUDA checks: see triton_mode)

HERE = Path(__file__).parent
PROBLEMS = HERE / "problems"
_ids = itertools.count()


def problem_path(name: str) -> Path:
    return PROBLEMS / f"{name}.py"


def candidate_path(name: str) -> Path:
    return HERE / f"{name}.py"


@contextlib.contextmanager
def restored() -> Iterator[None]:
    """Put back whatever a cheat replaced in time, torch, torch.cuda and torch's settings."""
    import time

    import torch

    saved = [(ns, dict(vars(ns))) for ns in (time, torch, torch.cuda, torch.Tensor, torch.nn.Module)]
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        for ns, before in saved:
            for k, v in before.items():
                if vars(ns).get(k) is not v:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(ns, k, v)
        torch.set_num_threads(threads)


@contextlib.contextmanager
def triton_mode(device: str) -> Iterator[None]:
    """Triton decides interpreter vs compiled kernel when @triton.jit runs (at import), from
    TRITON_INTERPRET. On CUDA the candidate must get real GPU kernels, as the worker gives it:
    the interpreter copies tensors to the host and back synchronously, so work queued on a
    side stream would be finished before forward returns and nothing async could be checked."""
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0" if device.startswith("cuda") else "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


def import_candidate(path: Path, device: str = "cpu") -> Any:
    name = f"htam_test_candidate_{path.stem}_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with triton_mode(device):
        spec.loader.exec_module(module)
    return module


def run_check(problem: str, candidate: str, overrides: dict | None = None, device: str = "cpu",
              after: Callable[[Any, Any], Any] | None = None, unseen: dict | None = None, **config: Any):
    """check_candidate(problem, candidate) with fresh guards; returns the CheckReport, or
    `after(ctx, report)` when given (still under the same guards). `unseen` replaces the
    problem's own unseen-shape overrides."""
    from htam_engine.evaluate.checks import CheckContext, check_candidate, install_guards
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.problems import instantiate, load_problem, unseen_shape_overrides, with_overrides

    prob = load_problem(str(problem_path(problem)), overrides)
    threads = set(threading.enumerate())
    with restored():
        guards = install_guards(device)
        try:
            module = import_candidate(candidate_path(candidate), device)
            ctx = CheckContext(
                instance=instantiate(prob, device),
                model_new_cls=module.ModelNew,
                device=device,
                config=EvalConfig(device=device, **config),
                guards=guards,
                make_variant=lambda ov: instantiate(with_overrides(prob, ov), device),
                unseen_overrides=unseen if unseen is not None else unseen_shape_overrides(prob),
            )
            report = check_candidate(ctx)
            return after(ctx, report) if after is not None else report
        finally:
            guards.uninstall()
            for t in set(threading.enumerate()) - threads:  # a cheat's leftover worker: let it end
                t.join(timeout=10)


def rules(report: Any) -> set[str]:
    return {f.rule for f in report.findings}
