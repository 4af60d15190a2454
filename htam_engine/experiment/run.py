"""Running an ablation experiment: every run as a headless session, all in parallel, to a deadline.

Output folder::

    DIR/experiment.json   the spec, the mode (measured or replayed), table counts, what finished
    DIR/runs.jsonl        one RunRecord per finished test run, appended as each finishes
    DIR/bank_runs.jsonl   the sessions the warm bank was learned from
    DIR/warm.htgbank      the warm bank
    DIR/report.md         the ablation table (experiment/report.py)

Order: the bank sessions start first, then the cold runs, then (once the bank is learned) the
warm runs; at most `concurrency` sessions are in flight, so runs finish in that order and a
deadline leaves whole groups of runs rather than every run half done. Rerunning into the same
folder with the same spec skips the runs already recorded.

The warm bank: one full-method session per bank problem, from the seed memory, all in
parallel, then merged into one bank in the spec's problem order. (`htam batch` carries the
bank from problem to problem instead; learning in parallel keeps the bank independent of
which session finished first, so a replay learns the same bank.)
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from htam_engine.errors import InputError, UsageError
from htam_engine.storage import atomic_write_text
from htam_engine.evaluate.config import EvalConfig
from htam_engine.experiment.plan import UNMEASURED, Arm, ExperimentSpec, RunKey, RunRecord, Start, StepRow
from htam_engine.experiment.table import MISSING_MESSAGE, TableCounts, code_hash
from htam_engine.loop.engine import Engine
from htam_engine.memory import HTG, load_bank, merge_session, save_bank
from htam_engine.problems.model import Problem
from htam_engine.session import candidate_code
from htam_engine.session.model import Session, SessionConfig

META = "experiment.json"
RUNS = "runs.jsonl"
BANK_RUNS = "bank_runs.jsonl"
BANK = "warm.htgbank"
REPORT = "report.md"
BANK_PHASE = "bank"


@dataclass(slots=True)
class Progress:
    """Callback payload: one run finished."""

    phase: str  # "bank", "cold" or "warm"
    done: int  # runs finished so far, all phases
    total: int
    key: RunKey
    record: RunRecord
    elapsed_s: float
    table: TableCounts


@dataclass(slots=True)
class Outcome:
    """What an experiment left: its records and the facts its report states."""

    spec: ExperimentSpec
    records: list[RunRecord]
    bank_records: list[RunRecord]
    meta: dict[str, Any] = field(default_factory=dict)


def _jsonl(path: Path) -> list[RunRecord]:
    if not path.exists():
        return []
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, start=1):
        try:
            out.append(RunRecord.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            if n == len(lines):  # torn by a crash: that run is simply run again
                break
            raise InputError(f"{path}: line {n} is not a run record ({exc})") from None
    return out


def _append(path: Path, rec: RunRecord) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec.to_dict(), allow_nan=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def record_of(key: RunKey, problem: Problem, session: Session, wall_s: float, finish: str) -> RunRecord:
    rows = []
    for rec in session.steps:
        out = rec.outcome
        res = out.result if out is not None else None
        code = candidate_code(out) if out is not None else None
        if res is not None:
            status = UNMEASURED if res.diagnostics.message == MISSING_MESSAGE else res.status.value
        elif out is not None and out.decision is not None:
            status = "vetoed" if out.decision.action == "veto" else out.decision.action
        else:
            status = "failed" if out is not None else "skipped"
        rows.append(StepRow(step=rec.step, direction=rec.selection.direction, mode=rec.selection.mode,
                            template=out.template if out is not None else None,
                            code_hash=code_hash(code) if code else None, status=status,
                            speedup=res.speedup_eager if res is not None and res.ok else None,
                            best=rec.best_speedup))
    return RunRecord(key=key, family=problem.family.value, steps=rows, finish=finish, wall_s=round(wall_s, 3))


def load_outcome(out: str | os.PathLike) -> Outcome:
    """An experiment folder as it stands (for the report and `htam compare`)."""
    d = Path(out)
    try:
        meta = json.loads((d / META).read_text(encoding="utf-8"))
        spec = ExperimentSpec.from_dict(meta["spec"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{d}: not an experiment folder ({exc})") from None
    return Outcome(spec=spec, records=_jsonl(d / RUNS), bank_records=_jsonl(d / BANK_RUNS), meta=meta)


class Experiment:
    """`await Experiment(spec, out, pool=..., proposer=..., eval_config=...).run(problems)`.

    pool: a TablePool (or anything with its evaluate/counts/mode); proposer: shared by every run
    (the offline proposer keeps no state between requests).
    """

    def __init__(self, spec: ExperimentSpec, out: str | os.PathLike, *, pool: Any, proposer: Any,
                 eval_config: EvalConfig, concurrency: int = 64, warm_bank: str | os.PathLike | None = None,
                 evaluator: str = "", on_progress: Callable[[Progress], None] | None = None):
        spec.check()
        self.spec = spec
        self.out = Path(out)
        self.pool = pool
        self.proposer = proposer
        self.eval_config = eval_config
        self.concurrency = max(1, concurrency)
        self.warm_bank = Path(warm_bank) if warm_bank is not None else None
        self.evaluator = evaluator
        self.on_progress = on_progress
        self._done = 0
        self._total = 0
        self._t0 = 0.0

    # ---- folder ---------------------------------------------------------------------------
    def _open(self) -> tuple[set[str], list[RunRecord]]:
        """Keys already recorded (a rerun skips them) and the bank runs recorded."""
        self.out.mkdir(parents=True, exist_ok=True)
        meta_path = self.out / META
        if meta_path.exists():
            old = load_outcome(self.out)
            if old.spec.to_dict() != self.spec.to_dict():
                raise UsageError(f"{self.out} holds an experiment with another spec; use another folder")
            return {r.key.text() for r in old.records}, old.bank_records
        atomic_write_text(meta_path, json.dumps({"spec": self.spec.to_dict()}, indent=2))
        return set(), []

    # ---- one run --------------------------------------------------------------------------
    async def _session(self, key: RunKey, problem: Problem, memory: HTG) -> tuple[Session, float, str]:
        s = self.spec
        config = SessionConfig(backend=s.backend, device=s.device, proposer=getattr(self.proposer, "name", ""),
                               policy="auto", steps=s.steps, samples=1, seed=key.seed, ablation=key.arm.ablation)
        engine = Engine(problem, config, proposer=self.proposer, pool=self.pool, htg=memory.copy(),
                        eval_config=replace(self.eval_config, overrides=dict(problem.overrides)), policy="auto",
                        select_config=s.select_config(key.arm))
        t0 = time.monotonic()
        session = await engine.run()
        return session, time.monotonic() - t0, engine.finish_reason or ""

    async def _one(self, key: RunKey, problem: Problem, memory: HTG, gate: asyncio.Semaphore, path: Path,
                   phase: str) -> Session | None:
        async with gate:
            session = None
            try:
                session, wall, finish = await self._session(key, problem, memory)
                rec = record_of(key, problem, session, wall, finish)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - one run's fault is recorded, the others go on
                rec = RunRecord(key=key, family=problem.family.value, steps=[], error=f"{type(exc).__name__}: {exc}")
            _append(path, rec)
            self._done += 1
            if self.on_progress is not None:
                self.on_progress(Progress(phase, self._done, self._total, key, rec, time.monotonic() - self._t0,
                                          self.pool.counts))
            return session

    # ---- phases ---------------------------------------------------------------------------
    async def _learn_bank(self, tasks: list[asyncio.Task]) -> HTG:
        sessions = await asyncio.gather(*tasks)
        bank = HTG.seed()
        for session in sessions:  # in the spec's order, whichever finished first
            if session is not None:
                merge_session(bank, session)
        save_bank(bank, self.out / BANK)
        return bank

    async def run(self, problems: dict[str, Problem], deadline_s: float | None = None) -> Outcome:
        """Run what is not recorded yet; stop at the deadline (seconds from now) and report what finished."""
        spec = self.spec
        wanted = spec.test + (spec.bank if Start.WARM in spec.starts else [])
        absent = [p for p in wanted if p not in problems]
        if absent:
            raise UsageError(f"problems not loaded: {', '.join(absent[:5])}")
        recorded, bank_records = self._open()
        self._t0 = time.monotonic()
        gate = asyncio.Semaphore(self.concurrency)
        todo = [k for k in spec.keys() if k.text() not in recorded]
        cold = [k for k in todo if k.start is Start.COLD]
        warm = [k for k in todo if k.start is Start.WARM]
        tasks: list[asyncio.Task] = []
        bank_source = "none"
        learn: list[asyncio.Task] = []
        if warm:
            if self.warm_bank is not None:
                bank_source = str(self.warm_bank)
            elif (self.out / BANK).exists():
                bank_source = f"learned earlier into {self.out / BANK}"
            else:
                bank_source = (f"learned here on {len(spec.bank)} bank problems ({spec.bank_seeds} "
                               f"{spec.bank_arm.value} session(s) each)")
                for key in spec.bank_keys():  # first in line for the gate
                    learn.append(asyncio.ensure_future(
                        self._one(key, problems[key.problem], HTG.seed(), gate, self.out / BANK_RUNS, BANK_PHASE)))
        self._total = len(todo) + len(learn)
        seed = HTG.seed()
        tasks += [asyncio.ensure_future(self._one(k, problems[k.problem], seed, gate, self.out / RUNS, k.start.value))
                  for k in cold]

        async def warm_phase() -> None:
            if self.warm_bank is not None:
                bank = load_bank(self.warm_bank)
            elif learn:
                bank = await self._learn_bank(learn)
            else:
                bank = load_bank(self.out / BANK)
            await asyncio.gather(*(self._one(k, problems[k.problem], bank, gate, self.out / RUNS, k.start.value)
                                   for k in warm))

        if warm:
            tasks.append(asyncio.ensure_future(warm_phase()))
        deadline_hit = False
        try:
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=deadline_s)
                deadline_hit = bool(pending)
                for t in [*pending, *learn]:
                    t.cancel()
                ended = await asyncio.gather(*tasks, *learn, return_exceptions=True)
                faults = [e for e in ended if isinstance(e, Exception)]
                if faults:  # not a run's fault (those are recorded): the experiment's own
                    raise faults[0]
        finally:
            await self.pool.close()
        outcome = load_outcome(self.out)
        outcome.meta.update({
            "mode": self.pool.mode.value, "evaluator": self.evaluator,
            "table": str(getattr(self.pool.table, "path", "") or ""), "table_counts": asdict(self.pool.counts),
            "table_size": len(self.pool.table), "warm_bank": bank_source,
            "planned_runs": len(spec.keys()), "finished_runs": len(outcome.records),
            "deadline_s": deadline_s, "deadline_hit": deadline_hit,
            "wall_s": round(time.monotonic() - self._t0, 1), "written_at": time.time(),
            "eval": {k: v for k, v in asdict(self.eval_config).items() if k != "overrides"},
        })
        atomic_write_text(self.out / META, json.dumps(outcome.meta, indent=2, default=str))
        return outcome
