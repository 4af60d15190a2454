"""The record codec: named and positional forms, bad data."""

import json

import pytest
from session_builders import build_session

from htam_engine.evaluate.result import EvalResult
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


@pytest.mark.parametrize("bad", [5, "x", {"status": "ok", "timings": "fast"}, {"correct": True}])
def test_bad_data_raises_codec_error(bad):
    with pytest.raises(codec.CodecError):
        codec.decode(EvalResult, bad)
