"""Building an engine from run options: the one path `htam run`, `htam batch` and the app share.

`RunSpec` holds what a person asked for (None = not given); `open_engine(spec)` resolves
the problem, the session (new, or loaded for resume), the memory, the proposer and a
worker pool, and returns an Engine; `await engine.aclose()` when done closes the pool
it created.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_engine.errors import EnvironmentFault, UsageError
from htam_engine.families import Backend
from htam_engine.loop.approval import check_policy
from htam_engine.loop.engine import Engine, check_ablation
from htam_engine.problems.model import Problem
from htam_engine.session.model import Session, SessionConfig

DEFAULT_STEPS = 6
SESSION_SUFFIX = ".htam"


@dataclass(slots=True)
class RunSpec:
    problem: str | None = None
    resume: str | None = None
    steps: int | None = None
    samples: int | None = None
    backend: str | None = None
    device: str | None = None
    proposer: str | None = None
    policy: str | None = None
    session: str | None = None  # where to write the session file
    seed: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    ablation: str | None = None
    token_budget: int | None = None
    cost_budget: float | None = None
    target_speedup: float | None = None
    bank: str | None = None  # memory bank path; "" = no bank (start from the seed, merge nothing)
    workers: int | None = None  # pool size; None = sized from samples and CPU cores
    trials: int | None = None  # timed trials per evaluation (harness default when None)
    timeout_s: float | None = None  # per evaluation
    compile_baseline: bool = True  # time the torch.compile baseline
    model_settings: dict[str, Any] = field(default_factory=dict)  # --model, --base-url, ... (ModelSettings fields)


def eval_settings(spec: RunSpec) -> dict[str, Any]:
    """The evaluation settings a person chose; kept in the session so a resume uses them too."""
    out: dict[str, Any] = {}
    if spec.trials is not None:
        out["trials"] = spec.trials
    if spec.timeout_s is not None:
        out["timeout_s"] = spec.timeout_s
    if not spec.compile_baseline:
        out["time_compile_baseline"] = False
    return out


def default_backend(device: str) -> str:
    return Backend.CUDA.value if device.startswith("cuda") else Backend.CPP.value


def check_backend(name: str) -> str:
    if name not in {b.value for b in Backend}:
        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(b.value for b in Backend)})")
    return name


def check_device(name: str) -> str:
    if name != "cpu" and not re.fullmatch(r"cuda(:\d+)?", name):
        raise UsageError(f"unknown device {name!r} (cpu, cuda or cuda:N)")
    return name


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def default_device() -> str:
    """cuda on a machine with a CUDA GPU, else cpu."""
    return "cuda" if cuda_available() else "cpu"


def require_machine(device: str, backend: str | None = None) -> None:
    """Refuse, before anything runs, what this machine cannot do: a CUDA device or the CUDA
    backend without a visible GPU, or CUDA kernels asked to run on the CPU."""
    if device.startswith("cuda") and not cuda_available():
        raise EnvironmentFault(f"--device {device}: no CUDA GPU is visible on this machine")
    if backend == Backend.CUDA.value:
        if not cuda_available():
            raise EnvironmentFault("--backend cuda: no CUDA GPU is visible on this machine")
        if not device.startswith("cuda"):
            raise UsageError("--backend cuda runs on a GPU: give --device cuda (or another backend)")


def pool_size(samples: int, device: str) -> int:
    """Workers for one step's candidates: one per sample, at most one per CPU core (compiles
    are CPU work; the pool serializes timing per GPU itself)."""
    return max(1, min(samples, os.cpu_count() or 1))


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "problem"


def default_session_path(problem: Problem) -> Path:
    from htam_engine.session import sessions_dir

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(sessions_dir()) / f"{safe_name(problem.name or problem.id)}-{stamp}{SESSION_SUFFIX}"


def problem_from_session(session: Session) -> Problem:
    """The problem exactly as the session recorded it (its source text and overrides)."""
    from htam_engine.problems.loader import fill_problem

    ref = session.problem
    level = session.config.extra.get("level")
    name = Path(ref.path).stem if ref.path else ref.id.split(":")[-1].split("/")[-1]
    problem = Problem(id=ref.id, name=name, source=ref.source, path=ref.path,
                      level=level if isinstance(level, int) else None, overrides=dict(ref.overrides))
    return fill_problem(problem)


def session_config(spec: RunSpec, problem: Problem) -> SessionConfig:
    device = check_device(spec.device or default_device())
    backend = check_backend(spec.backend or default_backend(device))
    require_machine(device, backend)
    steps = DEFAULT_STEPS if spec.steps is None else spec.steps
    samples = 1 if spec.samples is None else spec.samples
    if steps < 0 or samples < 1:
        raise UsageError("--steps must be >= 0 and --samples >= 1")
    cfg = SessionConfig(
        backend=backend, device=device, proposer=spec.proposer or "", policy=check_policy(spec.policy or "auto"),
        steps=steps, samples=samples, seed=spec.seed or 0, ablation=check_ablation(spec.ablation),
        token_budget=spec.token_budget, cost_budget=spec.cost_budget, target_speedup=spec.target_speedup,
    )
    if eval_settings(spec):
        cfg.extra["eval"] = eval_settings(spec)
    return cfg


def make_proposer_for(kind: str | None, config: SessionConfig, model_settings: dict[str, Any] | None = None) -> Any:
    from htam_engine.propose import default_kind, load_config, make_proposer

    cfg = load_config(model_settings or None)
    kind = kind or default_kind(cfg)
    config.proposer = kind
    if kind == "model":
        config.model = cfg.model.model
        config.base_url = cfg.model.base_url
    return make_proposer(kind, cfg)


def make_pool(size: int, device: str) -> Any:
    from htam_engine.evaluate.pool import WorkerPool

    return WorkerPool(size, device)


# What a resumed session keeps as it was configured: giving one of these with --resume is refused.
_FIXED_ON_RESUME = {
    "problem": "PROBLEM", "samples": "--samples", "backend": "--backend", "device": "--device",
    "proposer": "--proposer", "seed": "--seed", "ablation": "--ablation", "token_budget": "--token-budget",
    "cost_budget": "--cost-budget", "target_speedup": "--target", "trials": "--trials", "timeout_s": "--timeout",
}


def _check_resume_spec(spec: RunSpec) -> None:
    given = [flag for name, flag in _FIXED_ON_RESUME.items() if getattr(spec, name) is not None]
    given += ["--set"] if spec.overrides else []
    given += ["--no-compile-baseline"] if not spec.compile_baseline else []
    if given:
        raise UsageError(f"--resume continues a session as it was configured: {', '.join(given)} cannot change "
                         "(give --steps, --policy, --session, --bank, --workers or model flags)")


def resume_spec(path: str | Path, base: RunSpec | None = None, steps: int | None = None) -> RunSpec:
    """The spec that resumes `path`, keeping what `base` chose that a resume may change."""
    base = base or RunSpec()
    return RunSpec(resume=str(path), steps=steps, bank=base.bank, workers=base.workers,
                   model_settings=dict(base.model_settings))


def open_engine(spec: RunSpec, *, interactive: bool = False, pool: Any = None, proposer: Any = None,
                hold_open: bool = False) -> Engine:
    """An engine ready to `await engine.run()`; raises UsageError/ProblemError/InputError on bad input
    and EnvironmentFault when the machine cannot run it (no GPU for a CUDA session)."""
    from htam_engine.memory import HTG, default_bank_path, load_bank
    from htam_engine.problems import load_problem
    from htam_engine.session import load_session

    bank_path = default_bank_path() if spec.bank is None else (Path(spec.bank) if spec.bank else None)
    if spec.resume:
        _check_resume_spec(spec)
        session = load_session(spec.resume)
        require_machine(session.config.device, session.config.backend)
        problem = problem_from_session(session)
        if spec.policy:
            session.config.policy = check_policy(spec.policy)
        path = Path(spec.session) if spec.session else Path(spec.resume)
        proposer = proposer or make_proposer_for(session.config.proposer or None, session.config,
                                                  spec.model_settings)
        owned = pool is None
        pool = pool or make_pool(spec.workers or pool_size(session.config.samples, session.config.device),
                                 session.config.device)
        engine = Engine(problem, session=session, proposer=proposer, pool=pool, session_path=path,
                        steps=spec.steps, interactive=interactive, bank_path=bank_path,
                        policy=session.config.policy, hold_open=hold_open)
    else:
        if not spec.problem:
            raise UsageError("give a PROBLEM (a file or a built-in name) or --resume SESSION")
        device = check_device(spec.device or default_device())
        require_machine(device, spec.backend)
        problem = load_problem(spec.problem, spec.overrides, device=device)
        config = session_config(spec, problem)
        htg = load_bank(bank_path) if bank_path is not None else HTG.seed()
        path = Path(spec.session) if spec.session else default_session_path(problem)
        proposer = proposer or make_proposer_for(spec.proposer, config, spec.model_settings)
        owned = pool is None
        pool = pool or make_pool(spec.workers or pool_size(config.samples, device), device)
        engine = Engine(problem, config, proposer=proposer, pool=pool, htg=htg, session_path=path,
                        interactive=interactive, bank_path=bank_path, policy=config.policy, hold_open=hold_open)
    engine.owns_pool = owned
    return engine
