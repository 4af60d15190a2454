"""Packing a Session body for storage, reusing the bytes of steps already packed.

A session is saved after every step, and a finished step does not change, so the packed
bytes of each step (and of the memory snapshot) are kept and spliced into the next save:
saving step 2,000 packs one new step and copies the rest. The bytes are exactly what packing
the whole body at once gives (msgpack arrays are a header followed by their items).

Each kept step carries a fingerprint of what could plausibly change (its outcome, decisions,
results, reward, delta); a step whose fingerprint differs is packed again. Only the most
recently saved sessions are kept (CACHED_SESSIONS).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgpack

from htam_engine.session import codec
from htam_engine.session.model import Session, StepRecord

CACHED_SESSIONS = 4


def _fingerprint(rec: StepRecord) -> tuple:
    return (rec.step, rec.chosen, rec.reward, rec.best_speedup, rec.finished_at, rec.new_strategy,
            id(rec.memory_delta), len(rec.memory_delta), id(rec.selection), id(rec.retrieval), id(rec.state),
            tuple((id(c), id(c.decision), id(c.result), c.code, c.failure) for c in rec.candidates))


class _Kept:
    __slots__ = ("session", "memory", "memory_bytes", "steps")

    def __init__(self, session: Session) -> None:
        self.session = session  # held so the id() keys stay valid
        self.memory: Any = None
        self.memory_bytes = b""
        self.steps: dict[int, tuple[StepRecord, tuple, bytes]] = {}


_kept: OrderedDict[int, _Kept] = OrderedDict()


def _kept_for(session: Session) -> _Kept:
    k = _kept.get(id(session))
    if k is None or k.session is not session:
        k = _kept[id(session)] = _Kept(session)
    _kept.move_to_end(id(session))
    while len(_kept) > CACHED_SESSIONS:
        _kept.popitem(last=False)
    return k


def forget(session: Session) -> None:
    _kept.pop(id(session), None)


def pack_session(session: Session, schema: dict[str, list[str]]) -> bytes:
    """msgpack of {"schema": schema, "session": codec.encode(session)}, reusing kept step bytes."""
    k = _kept_for(session)
    packer = msgpack.Packer(use_bin_type=True)
    p = codec.plan(Session)
    encs = dict(p.enc)
    parts = [packer.pack_map_header(2), packer.pack("schema"), packer.pack(schema), packer.pack("session"),
             packer.pack_array_header(len(p.names))]
    fresh: dict[int, tuple[StepRecord, tuple, bytes]] = {}
    for i, (name, value) in enumerate(zip(p.names, p.getter(session))):
        if name == "steps":
            parts.append(packer.pack_array_header(len(value)))
            for rec in value:
                fp = _fingerprint(rec)
                kept = k.steps.get(id(rec))
                if kept is None or kept[0] is not rec or kept[1] != fp:
                    kept = (rec, fp, packer.pack(codec.encode(rec)))
                fresh[id(rec)] = kept
                parts.append(kept[2])
        elif name == "memory_initial":
            if k.memory is not value:
                k.memory, k.memory_bytes = value, packer.pack(value)
            parts.append(k.memory_bytes)
        else:
            conv = encs.get(i)
            parts.append(packer.pack(conv(value) if conv is not None and value is not None else value))
    k.steps = fresh
    return b"".join(parts)
