"""Session files: msgpack in a checksummed envelope (htam_engine/storage.py), saved atomically.

Format version 2 (current) body:
    {"schema": {record class: [field names]}, "session": <Session, positional (session/codec.py)>}
The memory snapshot (Session.memory_initial) is the HTG's columnar plain data. Saving reuses
the packed bytes of steps saved before (session/packing.py), so a save costs one new step
plus a copy. The envelope's
meta map holds what a listing needs (problem, steps, best speedup, updated_at) so listing a
folder does not decode whole sessions.
Version 1 (a flat map of named records with "format_version": 1 and no envelope) loads
through session/migrate.py. Loading never writes to the file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from htam_engine.errors import InputError
from htam_engine.session import codec
from htam_engine.storage import gc_paused, open_envelope, read_raw, write_envelope
from htam_engine.session.model import Session
from htam_engine.session.packing import pack_session

FORMAT_VERSION = 2
SESSION_KIND = "htam-session"


class SessionFileError(InputError):
    """A session file that cannot be read: corrupt, truncated, wrong types or a future version."""


_SCHEMA: dict[str, list[str]] | None = None


def _schema() -> dict[str, list[str]]:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = codec.schema_of(Session)
    return _SCHEMA


def best_speedup(session: Session) -> float | None:
    r = session.best_result
    return None if r is None else r.speedup_eager


def session_meta(session: Session) -> dict[str, Any]:
    return {"session": session.id, "problem": session.problem.id, "steps": len(session.steps),
            "best_speedup": best_speedup(session), "updated_at": session.updated_at,
            "parent": session.parent}


def save_session(session: Session, path: str | os.PathLike) -> None:
    """Atomic write (temp file in the same folder, flush, fsync, rename, fsync folder)."""
    session.updated_at = time.time()
    with gc_paused():
        body = pack_session(session, _schema())
        write_envelope(path, SESSION_KIND, FORMAT_VERSION, body, meta=session_meta(session))


def _open(path: Path, meta_only: bool = False) -> tuple[int, Any]:
    raw = read_raw(path, SessionFileError)
    return open_envelope(path, raw, SESSION_KIND, FORMAT_VERSION, SessionFileError, meta_only=meta_only)


def load_session(path: str | os.PathLike) -> Session:
    """Read a session; any fault raises SessionFileError naming the file (exit 2), file untouched."""
    p = Path(path)
    with gc_paused():
        return _load(p)


def _load(p: Path) -> Session:
    version, body = _open(p)
    try:
        if version == 0:
            from htam_engine.session.migrate import migrate_v1

            return migrate_v1(body)
        if not isinstance(body, dict) or not isinstance(body.get("schema"), dict):
            raise codec.CodecError("no schema")
        session = codec.decode(Session, body.get("session"), body["schema"])
        from htam_engine.session.validate import check_session

        check_session(session)
        return session
    except SessionFileError:
        raise
    except (codec.CodecError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise SessionFileError(f"{p}: not a valid session ({exc})") from None


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The listing summary of a session file, decoding only the envelope (v1 files decode whole)."""
    p = Path(path)
    version, meta = _open(p, meta_only=True)
    if version == 0:
        return session_meta(load_session(p))
    return meta
