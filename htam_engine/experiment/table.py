"""The evaluation table: each distinct candidate is evaluated once, for every arm and seed.

An ablation experiment runs the same problems under several arms and seeds; most of their
steps propose a candidate another run already proposed. The table keys an evaluation by
(problem, its source, overrides, backend, device, candidate source) and keeps the result, so
a kernel is compiled, checked and timed once, and every arm that proposes it sees the same
timing (no timing noise between arms).

File format (JSON lines): the first line is a header, {"table": 1, "settings": {...}}, the
evaluation settings the results were measured under (a table is extended only under the same
settings); each further line is {"key": {TableKey's fields}, "result": EvalResult.to_dict()}. A line is
written and flushed as soon as its result arrives, so a crash loses at most the evaluations in
flight; a torn last line is skipped on loading.

`TablePool` puts the table in front of a worker pool (measured mode) or stands alone (replay
mode: the search is run again against a table measured earlier, on any machine; a candidate
missing from the table is counted and comes back as a harness failure).
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError
from htam_engine.evaluate.cache import sha256_text
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import EvalResult, Status

TABLE_VERSION = 1
# Fields of EvalConfig that are part of the key itself rather than of the table's settings.
_KEYED_FIELDS = ("backend", "device", "overrides")
MISSING_MESSAGE = "not in the evaluation table (replay mode)"


class TableMode(str, Enum):
    MEASURED = "measured"  # misses are evaluated by a worker pool
    REPLAYED = "replayed"  # misses are reported, nothing is evaluated


@dataclass(frozen=True, slots=True)
class TableKey:
    problem: str
    problem_hash: str
    overrides: str
    backend: str
    device: str
    code_hash: str

    @classmethod
    def of(cls, problem: Any, code: str, config: EvalConfig) -> "TableKey":
        return cls(problem=problem.id, problem_hash=sha256_text(problem.source)[:16],
                   overrides=json.dumps(problem.overrides, sort_keys=True, default=repr),
                   backend=config.backend or "", device=config.device, code_hash=code_hash(code))

    def text(self) -> str:
        return "|".join((self.problem, self.problem_hash, self.overrides, self.backend, self.device, self.code_hash))


def code_hash(code: str) -> str:
    """The candidate's identity in the table and in run records."""
    return sha256_text(code)[:20]


def table_settings(config: EvalConfig) -> dict[str, Any]:
    """What a result depends on besides its key: the harness settings and the torch build."""
    import torch

    d = {k: v for k, v in asdict(config).items() if k not in _KEYED_FIELDS}
    d["torch"] = torch.__version__
    if config.device.startswith("cuda") and torch.cuda.is_available():
        d["gpu"] = torch.cuda.get_device_name(torch.device(config.device))
    return json.loads(json.dumps(d, sort_keys=True, default=repr))


class EvalTable:
    """Results by key, loaded from and appended to a JSON-lines file (or held in memory: path None)."""

    def __init__(self, path: str | os.PathLike | None, settings: dict[str, Any] | None = None):
        """settings None: take the file's (replay); else they must match the file's, if it exists."""
        self.path = Path(path) if path is not None else None
        self._rows: dict[str, dict[str, Any]] = {}
        self._devices: set[str] = set()
        file_settings = self._load() if self.path is not None and self.path.exists() else None
        if settings is not None and file_settings is not None and settings != file_settings:
            diff = sorted(k for k in set(settings) | set(file_settings) if settings.get(k) != file_settings.get(k))
            raise InputError(f"{self.path}: measured under other settings ({', '.join(diff)}); use another table")
        if settings is None and file_settings is None:
            raise InputError(f"{self.path}: no evaluation table there")
        self.settings: dict[str, Any] = settings if settings is not None else file_settings  # type: ignore[assignment]
        if self.path is not None and file_settings is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"table": TABLE_VERSION, "settings": self.settings})

    def _load(self) -> dict[str, Any]:
        assert self.path is not None
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{self.path}: cannot read the evaluation table ({exc})") from None
        try:
            head = json.loads(lines[0])
            if head.get("table") != TABLE_VERSION or not isinstance(head.get("settings"), dict):
                raise ValueError("no table header")
        except (IndexError, ValueError, AttributeError) as exc:
            raise InputError(f"{self.path}: not an evaluation table ({exc})") from None
        for n, line in enumerate(lines[1:], start=2):
            try:
                row = json.loads(line)
                key = TableKey(**row["key"])
                EvalResult.from_dict(row["result"])
                self._rows[key.text()] = row["result"]
                self._devices.add(key.device)
            except (ValueError, KeyError, TypeError) as exc:
                if n == len(lines):  # a write torn by a crash: the evaluation is simply redone
                    break
                raise InputError(f"{self.path}: line {n} is not a table row ({exc})") from None
        return head["settings"]

    def _append(self, doc: dict[str, Any]) -> None:
        assert self.path is not None
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, allow_nan=False, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: TableKey) -> bool:
        return key.text() in self._rows

    def get(self, key: TableKey) -> EvalResult | None:
        row = self._rows.get(key.text())
        return EvalResult.from_dict(row) if row is not None else None  # a fresh copy for each reader

    def devices(self) -> set[str]:
        """The devices the results were measured on (a replay must run its searches for one of them)."""
        return set(self._devices)

    def put(self, key: TableKey, result: EvalResult) -> None:
        doc = _finite(result.to_dict())
        self._rows[key.text()] = doc
        self._devices.add(key.device)
        if self.path is not None:
            self._append({"key": asdict(key), "result": doc})


def _finite(d: Any) -> Any:
    """JSON has no NaN or infinity: such a figure is stored as missing."""
    if isinstance(d, float):
        return d if d == d and d not in (float("inf"), float("-inf")) else None
    if isinstance(d, dict):
        return {k: _finite(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_finite(v) for v in d]
    return d


@dataclass(slots=True)
class TableCounts:
    requests: int = 0  # evaluations the searches asked for
    hits: int = 0  # answered from the table (measured earlier or by another run)
    joined: int = 0  # answered by an evaluation another run had already started
    evaluated: int = 0  # sent to the worker pool
    missing: int = 0  # replay mode: not in the table


class TablePool:
    """`await evaluate(problem, code, config)` like a WorkerPool's, through the table."""

    def __init__(self, table: EvalTable, inner: Any = None):
        self.table = table
        self.inner = inner
        self.counts = TableCounts()
        self._inflight: dict[str, asyncio.Task[EvalResult]] = {}

    @property
    def mode(self) -> TableMode:
        return TableMode.MEASURED if self.inner is not None else TableMode.REPLAYED

    async def evaluate(self, problem: Any, code: str, config: EvalConfig | None = None,
                       on_progress: Any = None) -> EvalResult:
        config = config or EvalConfig()
        key = TableKey.of(problem, code, config)
        self.counts.requests += 1
        known = self.table.get(key)
        if known is not None:
            self.counts.hits += 1
            return known
        if self.inner is None:
            self.counts.missing += 1
            return EvalResult.failure(Status.RUNTIME_ERROR, MISSING_MESSAGE, device=config.device,
                                      backend=config.backend or "")
        task = self._inflight.get(key.text())
        if task is not None:
            self.counts.joined += 1
        else:
            self.counts.evaluated += 1
            task = asyncio.ensure_future(self._measure(key, problem, code, config, on_progress))
            self._inflight[key.text()] = task
        # shielded: one run cancelled (its deadline) leaves the evaluation to the others waiting on it
        result = await asyncio.shield(task)
        return EvalResult.from_dict(result.to_dict())

    async def _measure(self, key: TableKey, problem: Any, code: str, config: EvalConfig,
                       on_progress: Any) -> EvalResult:
        try:
            result = await self.inner.evaluate(problem, code, config, on_progress=on_progress)
            self.table.put(key, result)
            return result
        finally:
            self._inflight.pop(key.text(), None)

    async def close(self) -> None:
        """Stop evaluations still in flight (a deadline passed), then the worker pool."""
        pending = list(self._inflight.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self.inner is not None:
            await self.inner.close()
