"""`htam batch`: many problems, one session each, resumable, with a results table and report.

Layout of the output folder::

    DIR/batch.json        settings and which problems finished (and why); written atomically
    DIR/sessions/*.htam   one session per problem
    DIR/memory.htgbank    the memory carried from problem to problem within this batch
    DIR/results.json      rows (one per problem) + suite metrics, recomputed from the session files
    DIR/results.csv       the rows
    DIR/report.md         the metrics as a Markdown report
    DIR/solutions/*.py    with --verify: each problem's best, exported
    DIR/verify.json       with --verify: htam's and KernelBench's verdicts on them, side by side

Resuming: a problem marked finished in batch.json is skipped; one with a session file but
no mark (interrupted) resumes where its session stopped; the others start fresh.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from htam_engine.errors import InputError, UsageError
from htam_engine.loop import metrics
from htam_engine.loop.engine import Engine
from htam_engine.loop.report import render_report
from htam_engine.loop.setup import RunSpec, make_pool, make_proposer_for, pool_size, safe_name, session_config
from htam_engine.problems.model import Problem
from htam_engine.storage import atomic_write_text

if TYPE_CHECKING:
    from htam_engine.verify.exports import BatchVerification

LEDGER = "batch.json"
# Settings that must match to resume into the same folder (they change what the numbers mean).
_PINNED = ("steps", "samples", "ablation", "device", "backend", "proposer", "seed")


@dataclass(slots=True)
class BatchSpec:
    suites: list[str]
    out: str
    steps: int = 3
    samples: int = 1
    levels: list[int] | None = None
    ablation: str | None = None
    device: str = "cpu"
    backend: str | None = None
    proposer: str | None = None
    seed: int = 0
    limit: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    workers: int | None = None
    jobs: int = 1  # problems in flight at once
    trials: int | None = None
    timeout_s: float | None = None
    compile_baseline: bool = True
    model_settings: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ProblemDone:
    """Progress callback payload: one problem finished (or skipped, or failed)."""

    index: int
    total: int
    problem: str
    row: dict[str, Any] | None
    skipped: bool = False
    error: str = ""


class Batch:
    def __init__(self, spec: BatchSpec):
        self.spec = spec
        self.out = Path(spec.out)
        self.sessions_dir = self.out / "sessions"
        self.ledger_path = self.out / LEDGER
        self.bank_path = self.out / "memory.htgbank"
        self._bank_lock = asyncio.Lock()
        self.ledger: dict[str, Any] = {}
        self.broken: list[str] = []
        self.verification: BatchVerification | None = None  # set by --verify, after the run

    # ---- ledger ----------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        d = asdict(self.spec)
        return {k: d[k] for k in _PINNED}

    def _open_ledger(self) -> None:
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        settings = self._settings()
        if self.ledger_path.exists():
            try:
                ledger = json.loads(self.ledger_path.read_text(encoding="utf-8"))
                old = ledger["settings"]
                done = dict(ledger["done"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{self.ledger_path}: not a batch ledger ({exc})") from None
            # a ledger from before the proposer was recorded (None) matches whichever runs
            diff = [k for k in _PINNED if old.get(k) != settings[k] and not (k == "proposer" and old.get(k) is None)]
            if diff:
                raise UsageError(f"{self.out} holds a batch run with other settings "
                                 f"({', '.join(f'{k}={old.get(k)!r}' for k in diff)}); use another --out")
            self.ledger = {"settings": old, "done": done, "sessions": dict(ledger.get("sessions", {}))}
        else:
            self.ledger = {"settings": settings, "done": {}, "sessions": {}}
            self._save_ledger()

    def _save_ledger(self) -> None:
        atomic_write_text(self.ledger_path, json.dumps(self.ledger, indent=2))

    def session_path(self, problem: Problem) -> Path:
        return self.sessions_dir / f"{safe_name(problem.id)}.htam"

    # ---- running ---------------------------------------------------------------------
    async def run(self, problems: list[Problem], on_done: Callable[[ProblemDone], None] | None = None,
                  on_engine: Callable[[Engine], None] | None = None, pool: Any = None) -> dict[str, Any]:
        """pool: an evaluator with the worker pool's evaluate/close (the batch closes it); None: htam's
        worker pool of spec.workers."""
        spec = self.spec
        probe = session_config(self._run_spec(), problems[0]) if problems else None
        proposer = make_proposer_for(spec.proposer, probe, spec.model_settings) if probe else None
        if probe is not None:  # the ledger and report name the proposer that runs, not "None"
            spec.proposer = probe.proposer
        self._open_ledger()
        if pool is None:
            pool = make_pool(spec.workers or pool_size(spec.samples * max(1, spec.jobs), spec.device), spec.device)
        counter = {"n": 0}
        gate = asyncio.Semaphore(max(1, spec.jobs))

        async def one(problem: Problem) -> None:
            async with gate:
                done = await self._one(problem, pool, proposer, on_engine)
                counter["n"] += 1
                done.index, done.total = counter["n"], len(problems)
                if on_done is not None:
                    on_done(done)

        try:
            await asyncio.gather(*(one(p) for p in problems))
        finally:
            await pool.close()
        return self.write_results(problems)

    def _run_spec(self) -> RunSpec:
        s = self.spec
        return RunSpec(steps=s.steps, samples=s.samples, backend=s.backend, device=s.device,
                       proposer=s.proposer, policy="auto", seed=s.seed, ablation=s.ablation, trials=s.trials,
                       timeout_s=s.timeout_s, compile_baseline=s.compile_baseline,
                       model_settings=s.model_settings)

    async def _one(self, problem: Problem, pool: Any, proposer: Any,
                   on_engine: Callable[[Engine], None] | None) -> ProblemDone:
        from htam_engine.memory import HTG, load_bank
        from htam_engine.session import load_session

        path = self.session_path(problem)
        if problem.id in self.ledger["done"] and path.exists():
            return ProblemDone(0, 0, problem.id, metrics.problem_row(load_session(path), path), skipped=True)
        try:
            if path.exists():
                session = load_session(path)
                engine = Engine(problem, session=session, proposer=proposer, pool=pool, session_path=path,
                                policy="auto")
            else:
                async with self._bank_lock:
                    htg = load_bank(self.bank_path) if self.bank_path.exists() else HTG.seed()
                config = session_config(self._run_spec(), problem)
                config.proposer = getattr(proposer, "name", config.proposer) or config.proposer
                engine = Engine(problem, config, proposer=proposer, pool=pool, htg=htg, session_path=path,
                                policy="auto")
            if on_engine is not None:
                on_engine(engine)
            session = await engine.run()
            await self._merge(session)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - one problem's failure must not stop the batch
            return ProblemDone(0, 0, problem.id, None, error=f"{type(exc).__name__}: {exc}")
        self.ledger["done"][problem.id] = engine.finish_reason or "steps"
        self.ledger["sessions"][problem.id] = str(path.relative_to(self.out))
        self._save_ledger()
        return ProblemDone(0, 0, problem.id, metrics.problem_row(session, path))

    async def _merge(self, session: Any) -> None:
        if self.spec.ablation == "no-update":
            return
        from htam_engine.memory.bank import merge_into_bank

        async with self._bank_lock:
            await asyncio.to_thread(merge_into_bank, session, self.bank_path)

    # ---- results ---------------------------------------------------------------------
    def write_results(self, problems: list[Problem]) -> dict[str, Any]:
        """results.json/csv and report.md from the session files of the given problems."""
        paths = [self.session_path(p) for p in problems if self.session_path(p).exists()]
        rows = metrics.rows_from_sessions(paths)
        for row in rows:
            row["session"] = str(Path(row["session"]).relative_to(self.out))
        summary = metrics.suite_metrics(rows)
        doc = {
            "settings": self.ledger.get("settings", self._settings()),
            "metrics": summary,
            "rows": rows,
            "unfinished": [p.id for p in problems if p.id not in self.ledger.get("done", {})],
            "broken": list(self.broken),
            "written_at": time.time(),
        }
        if self.verification is not None:
            doc["verify"] = self.verification.to_dict()
        atomic_write_text(self.out / "results.json", json.dumps(doc, indent=2, allow_nan=False, default=_json_default))
        atomic_write_text(self.out / "results.csv", rows_csv(rows))
        atomic_write_text(self.out / "report.md", render_report(doc) + (
            "\n" + self.verification.markdown() if self.verification is not None else ""))
        return doc


def _json_default(value: Any) -> Any:
    return str(value)


def rows_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(metrics.ROW_FIELDS), extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in metrics.ROW_FIELDS})
    return buf.getvalue()


def load_results(path: str | Path) -> dict[str, Any]:
    """A results.json (or a batch folder holding one), for `htam compare`."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    not_results = f"{p}: not an htam results file (give a batch folder or its results.json)"
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(not_results) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read results ({exc.strerror or exc})") from None
    try:
        doc = json.loads(text)
    except ValueError:
        raise InputError(not_results) from None
    if not isinstance(doc, dict) or "metrics" not in doc or "rows" not in doc:
        raise InputError(f"{p}: not an htam results file (no metrics/rows)")
    doc["_path"] = str(p)
    return doc
