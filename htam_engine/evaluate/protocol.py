"""Framing between the engine and a judge, and between a judge and its sandboxes: a 4-byte
length, then the payload.

Requests (engine -> judge, judge -> zygote or sandbox) are pickled: they come from trusted
code and carry Python values such as tuple-valued overrides. Replies are msgpack: a sandbox
runs untrusted candidate code, so the judge only ever decodes plain data from it (checked
against wire.py's schema) and never unpickles what a sandbox sends. The judge's own replies to
the engine use the same msgpack framing.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from typing import Any

import msgpack

_HEADER = struct.Struct(">I")
MAX_REPLY_BYTES = 8 * 1024 * 1024  # a reply larger than this is a misbehaving worker


class ProtocolError(Exception):
    """The other side closed the pipe (`closed`) or sent something that is not a message."""

    def __init__(self, message: str, *, closed: bool = False):
        super().__init__(message)
        self.closed = closed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        part = os.read(fd, n - len(chunks))
        if not part:
            raise ProtocolError("pipe closed", closed=True)
        chunks += part
    return bytes(chunks)


def send_request(fd: int, msg: dict[str, Any]) -> None:
    payload = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, _HEADER.pack(len(payload)) + payload)


def recv_request(fd: int) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return pickle.loads(_read_exact(fd, size))


def frame_reply(msg: dict[str, Any]) -> bytes:
    payload = msgpack.packb(msg, use_bin_type=True, default=str)
    return _HEADER.pack(len(payload)) + payload


def send_reply(fd: int, msg: dict[str, Any]) -> None:
    _write_all(fd, frame_reply(msg))


class ReplyReader:
    """Reads msgpack replies from a worker (or a sandbox) with a deadline, never blocking past it.

    Bytes already received outside the reader (with a descriptor, see feed) come first."""

    def __init__(self, fd: int, max_bytes: int = MAX_REPLY_BYTES):
        self.fd = fd
        self.max_bytes = max_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def _fill(self, want: int, deadline: float) -> bool:
        while len(self._buf) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return False
            part = os.read(self.fd, max(65536, want - len(self._buf)))
            if not part:
                raise ProtocolError("the reply channel closed", closed=True)
            self._buf += part
        return True

    def poll(self, timeout: float) -> dict[str, Any] | None:
        """The next reply, or None when none arrived within `timeout` seconds."""
        deadline = time.monotonic() + max(0.0, timeout)
        if not self._fill(_HEADER.size, deadline):
            return None
        (size,) = _HEADER.unpack(self._buf[: _HEADER.size])
        if size > self.max_bytes:
            raise ProtocolError(f"an oversized message ({size} bytes)")
        # Once a header arrived, the body follows promptly from honest code; allow a short grace.
        if not self._fill(_HEADER.size + size, max(deadline, time.monotonic() + 5.0)):
            raise ProtocolError("a truncated message")
        body = bytes(self._buf[_HEADER.size: _HEADER.size + size])
        del self._buf[: _HEADER.size + size]
        try:
            msg = msgpack.unpackb(body, raw=False, strict_map_key=False)
        except Exception as exc:  # noqa: BLE001 - any decode fault is the worker's
            raise ProtocolError(f"an undecodable message: {exc}") from None
        if not isinstance(msg, dict):
            raise ProtocolError("a message that is not a map")
        return msg
