"""The on-disk cache: compiled extensions per source hash, candidate files, locks.

Everything lives under the `cache_dir` setting (`HTAM_CACHE_DIR`, default `~/.cache/htam`), so separate htam
processes (a batch run and the app) share builds and serialize timing on a device.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Iterator

from htam_engine import settings


def cache_dir() -> Path:
    root = settings.cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    return root


def sha256_text(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def candidate_key(code: str, backend: str, device_kind: str, torch_version: str) -> str:
    """The compile-cache key: same source, backend, device kind and torch build -> same binary."""
    return sha256_text(code, backend, device_kind, torch_version)[:20]


def build_dir(key: str) -> Path:
    """The per-candidate folder that load_inline builds into."""
    path = cache_dir() / "build" / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def built_marker(key: str) -> Path:
    """Written after a candidate imported successfully: its next import is a cache hit."""
    return build_dir(key) / ".htam-built"


def _lock_path(name: str) -> Path:
    path = cache_dir() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def file_lock(name: str, shared: bool = False) -> Iterator[None]:
    """An exclusive (or shared) lock across every process using this cache dir.

    fcntl locks die with their holder, so a worker killed mid-compile or mid-timing
    never leaves a stale lock behind.
    """
    with open(_lock_path(name), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def any_file_lock(names: list[str], poll_s: float = 0.05) -> Iterator[str]:
    """The first of several exclusive locks to be free (a counting semaphore across processes)."""
    handles = [open(_lock_path(n), "a+") for n in names]
    try:
        while True:
            for name, fh in zip(names, handles):
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                try:
                    yield name
                finally:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                return
            time.sleep(poll_s)
    finally:
        for fh in handles:
            fh.close()


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
