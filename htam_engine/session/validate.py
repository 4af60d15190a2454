"""Consistency checks on a decoded session: what the type-checked decode cannot see."""

from __future__ import annotations

from htam_engine.memory.check import DataCheckError, check_data
from htam_engine.memory.graph import DATA_SCHEMA
from htam_engine.session.codec import CodecError
from htam_engine.session.model import Session


def check_session(s: Session) -> None:
    """Raise CodecError (one line) when the session's parts contradict each other."""
    if not s.id:
        raise CodecError("session has no id")
    try:
        check_data(s.memory_initial, DATA_SCHEMA)
    except DataCheckError as exc:
        raise CodecError(f"memory snapshot: {exc}") from None
    for i, rec in enumerate(s.steps, start=1):
        if rec.step != i:
            raise CodecError(f"step {i} is numbered {rec.step}")
        if rec.chosen is not None and not 0 <= rec.chosen < len(rec.candidates):
            raise CodecError(f"step {i} chose sample {rec.chosen} of {len(rec.candidates)}")
        if not isinstance(rec.memory_delta, dict):
            raise CodecError(f"step {i} memory delta is not a map")
    if s.best_step is not None and not 1 <= s.best_step <= len(s.steps):
        raise CodecError(f"best step {s.best_step} is not among steps 1..{len(s.steps)}")
    if s.parent is not None and not isinstance(s.parent, dict):
        raise CodecError("parent is not a map")
