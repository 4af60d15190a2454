"""The record codec: named and positional forms, engine events, bad data."""

import json

import pytest
from session_builders import build_session

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.loop import events as ev
from htam_engine.session import codec
from htam_engine.storage import pack, unpack
from htam_engine.session.model import Session, StepRecord


def test_named_and_positional_forms_decode_to_the_same_record():
    s, _ = build_session(3, seed=1)
    rec = s.steps[1]
    assert codec.decode(StepRecord, codec.to_plain(rec)) == rec
    assert codec.decode(StepRecord, unpack(pack(codec.encode(rec))), codec.schema_of(StepRecord)) == rec
    assert json.loads(json.dumps(codec.to_plain(s)))["steps"][1]["state"]["family"] == "elementwise"
    assert codec.decode(Session, unpack(pack(codec.encode(s)))) == s


def test_every_engine_event_round_trips_through_plain_data():
    s, _ = build_session(2, seed=1)
    rec = s.steps[0]
    result = EvalResult(status=Status.OK, correct=True, speedup_eager=1.5, timings=[1.0])
    samples = [
        ev.SessionStarted(0, session_path="a.htam", problem_id="p", steps_planned=3),
        ev.StepStarted(1, state=rec.state), ev.DirectionSelected(1, selection=rec.selection),
        ev.StrategiesRetrieved(1, retrieval=rec.retrieval), ev.TokensStreamed(1, sample=0, text="tok"),
        ev.EvaluationFinished(1, sample=0, result=result), ev.SessionFinished(3, reason="steps", best=result),
        ev.MemoryUpdated(1, reward=0.4, direction="vectorization"),
    ]
    for e in samples:
        d = json.loads(json.dumps(codec.event_to_plain(e)))
        assert d["kind"] == e.kind
        assert codec.event_from_plain(d) == e
    with pytest.raises(codec.CodecError):
        codec.event_from_plain({"kind": "nope"})


@pytest.mark.parametrize("bad", [5, "x", {"status": "ok", "timings": "fast"}, {"correct": True}])
def test_bad_data_raises_codec_error(bad):
    with pytest.raises(codec.CodecError):
        codec.decode(EvalResult, bad)
