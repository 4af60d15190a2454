"""File formats and atomic writes: the one storage layer of session files, memory banks,
batch ledgers and reports.

Checksummed msgpack files: the envelope shared by session files and memory banks.

A file is one msgpack map {"format": KIND, "version": N, "crc32": C, "body": BYTES}, where BYTES
is the msgpack of the content and C its CRC-32, so truncation and bit flips are detected
before anything is decoded. Writes go to a temporary file in the same folder, are flushed and
fsynced, renamed over the target, and the folder is fsynced: a crash leaves the old file or
the new one, never a mix.
"""

from __future__ import annotations

import gc
import os
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import msgpack

from htam_engine.errors import InputError


class EnvelopeError(InputError):
    """A file that is not a readable envelope of the expected kind; str() names the file."""


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


def _remove_stale_temps(path: Path) -> None:
    """Temp files of writers that died mid-save (their pid is gone) are removed."""
    prefix = _tmp_prefix(path)
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        pid_text = name[len(prefix):].split(".")[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass
        except OSError:
            pass


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """`atomic_write` of UTF-8 text (ledgers, reports, JSON results)."""
    atomic_write(path, text.encode("utf-8"))


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    tmp = path.parent / f"{_tmp_prefix(path)}{os.getpid()}.{id(data):x}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_envelope(path: str | os.PathLike, kind: str, version: int, body: Any, meta: dict | None = None) -> None:
    """meta: a small summary readable without decoding the body (e.g. for listings)."""
    raw = body if isinstance(body, bytes) else pack(body)
    top = {"format": kind, "version": version, "crc32": zlib.crc32(raw), "meta": meta or {}, "body": raw}
    atomic_write(path, pack(top))


def read_raw(path: str | os.PathLike, error: type[InputError] = EnvelopeError) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None


def open_envelope(path: str | os.PathLike, raw: bytes, kind: str, max_version: int,
                  error: type[InputError] = EnvelopeError, *, meta_only: bool = False) -> tuple[int, Any]:
    """(version, decoded body); meta_only: (version, the envelope's meta map) after the checksum.

    A top-level map without "format" is returned whole as version 0 for the caller's legacy reader.
    """
    if not raw:
        raise error(f"{path}: empty file")
    try:
        top = unpack(raw)
    except Exception as exc:  # msgpack raises several types for truncated or garbled input
        raise error(f"{path}: not a readable {kind} file (corrupt or truncated: {type(exc).__name__})") from None
    if not isinstance(top, dict):
        raise error(f"{path}: not a {kind} file")
    if "format" not in top:
        return 0, top
    if top.get("format") != kind:
        raise error(f"{path}: is a {top.get('format')!r} file, not a {kind} file")
    version = top.get("version")
    if not isinstance(version, int) or version < 1:
        raise error(f"{path}: bad format version {version!r}")
    if version > max_version:
        raise error(f"{path}: format version {version} is newer than this htam reads ({max_version}); upgrade htam")
    body = top.get("body")
    if not isinstance(body, bytes) or zlib.crc32(body) != top.get("crc32"):
        raise error(f"{path}: checksum mismatch (the file is corrupt)")
    if meta_only:
        meta = top.get("meta")
        return version, meta if isinstance(meta, dict) else {}
    try:
        return version, unpack(body)
    except Exception as exc:
        raise error(f"{path}: corrupt body ({type(exc).__name__})") from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: building hundreds of thousands of records otherwise
    triggers it over and over (measured: 3-5x slower save and load of a 2,000-step session)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
