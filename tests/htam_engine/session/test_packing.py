"""Saving reuses the packed bytes of earlier steps and still writes exactly the whole body."""

import dataclasses

from session_builders import add_steps, build_session

from htam_engine.session import codec, load_session, save_session
from htam_engine.storage import pack
from htam_engine.session.model import Decision, Session
from htam_engine.session.packing import _kept, pack_session

SCHEMA = codec.schema_of(Session)


def whole(s):
    return pack({"schema": SCHEMA, "session": codec.encode(s)})


def test_spliced_bytes_equal_packing_the_whole_body_and_steps_are_reused():
    s, mem = build_session(8, seed=4, samples=2)
    assert pack_session(s, SCHEMA) == whole(s)
    kept = _kept[id(s)].steps
    first = {k: v[2] for k, v in kept.items()}
    import random

    add_steps(s, mem, 2, random.Random(1))
    assert pack_session(s, SCHEMA) == whole(s)
    again = _kept[id(s)].steps
    assert all(again[k][2] is b for k, b in first.items())  # the same bytes object: not packed again
    assert len(again) == 10


def test_replaced_parts_of_a_step_are_packed_again(tmp_path):
    s, _ = build_session(5, seed=2)
    p = tmp_path / "s.htam"
    save_session(s, p)
    rec = s.steps[2]
    rec.candidates[0].decision = Decision("veto", "person", reason="changed my mind")
    s.steps[3] = dataclasses.replace(s.steps[3], reward=-0.25)
    save_session(s, p)
    back = load_session(p)
    assert back.steps[2].candidates[0].decision.reason == "changed my mind"
    assert back.steps[3].reward == -0.25
    assert back == s
