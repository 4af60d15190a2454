"""The memory bank file: the HTG carried across problems and sessions.

A new session starts from the bank; finishing one merges its step deltas back. The bank keeps,
per origin session id, the steps whose deltas it holds, so merging the same session twice (or
a branch that shares its parent's first steps) never counts a step twice.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from htam_engine.errors import InputError
from htam_engine.memory.graph import HTG, MemoryDataError
from htam_engine.memory.learn import apply_delta, upgrade_from_seed
from htam_engine.record_lock import EXCLUSIVE, UNLOCK, record_lock
from htam_engine.storage import gc_paused, open_envelope, read_raw, write_envelope

if TYPE_CHECKING:
    from htam_engine.session.model import Session

BANK_KIND = "htam-bank"
BANK_VERSION = 1
BANK_FILENAME = "memory.htgbank"


class BankFileError(InputError):
    """A memory bank that cannot be read; str() names the file."""


def default_bank_path() -> Path:
    """The `bank` setting (HTAM_BANK), else memory.htgbank in the sessions folder."""
    from htam_engine import settings

    chosen = settings.value("bank")
    if chosen:
        return Path(chosen).expanduser()
    return settings.path_value("sessions_dir") / BANK_FILENAME


def load_bank(path: str | os.PathLike | None = None) -> HTG:
    """The bank at path (default: default_bank_path()); a missing file gives the seed HTG."""

    p = Path(path) if path is not None else default_bank_path()
    if not p.exists():
        return HTG.seed()
    raw = read_raw(p, BankFileError)
    with gc_paused():
        version, body = open_envelope(p, raw, BANK_KIND, BANK_VERSION, BankFileError)
        if version == 0:
            raise BankFileError(f"{p}: not a memory bank file")
        try:
            return upgrade_from_seed(HTG.from_data(body, copy=False))
        except MemoryDataError as exc:
            raise BankFileError(f"{p}: {exc}") from None


def save_bank(htg: HTG, path: str | os.PathLike | None = None) -> Path:

    p = Path(path) if path is not None else default_bank_path()
    with gc_paused():
        write_envelope(p, BANK_KIND, BANK_VERSION, htg.to_data(copy=False))
    return p


@contextmanager
def bank_lock(path: str | os.PathLike) -> Iterator[None]:
    """Exclusive lock on a bank (a sidecar .lock file), so concurrent merges do not lose updates."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p.with_name(p.name + ".lock"), "a+b") as f:
        record_lock(f.fileno(), EXCLUSIVE)  # a record lock: a sandbox may read the file, but not hold this
        try:
            yield
        finally:
            record_lock(f.fileno(), UNLOCK)


def merge_into_bank(session: "Session", path: str | os.PathLike | None = None) -> int:
    """Load the bank, merge the session, save it, under the bank's lock; returns steps merged."""
    p = Path(path) if path is not None else default_bank_path()
    with bank_lock(p):
        bank = load_bank(p)
        n = merge_session(bank, session)
        if n or not p.exists():
            save_bank(bank, p)
    return n


def merge_session(bank: HTG, session: "Session") -> int:
    """Replay the session's step deltas not yet in the bank; returns how many steps were merged."""
    merged = 0
    seen = {k: set(v) for k, v in bank.merged.items()}
    for rec in session.steps:
        delta = rec.memory_delta or {}
        origin = str(delta.get("session") or session.id)
        step = int(delta.get("step") or rec.step)
        done = seen.setdefault(origin, set())
        if step in done:
            continue
        apply_delta(bank, delta)
        done.add(step)
        merged += 1
    bank.merged = {k: sorted(v) for k, v in seen.items() if v}
    return merged
