"""Property: any memory survives to_data/from_data and a bank file unchanged."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from htg_builders import grow

from htam_engine.memory import HTG, load_bank, save_bank
from htam_engine.storage import pack, unpack

texts = st.text(max_size=40)


@st.composite
def memories(draw):
    h = grow(HTG.seed(), random.Random(draw(st.integers(0, 2**32))), draw(st.integers(0, 40)),
             draw(st.integers(0, 400)), notes=draw(st.integers(0, 10)))
    for title, desc, pit in draw(st.lists(st.tuples(texts, texts, texts), max_size=5)):
        d = draw(st.sampled_from(h.directions()))
        sid = h.add_strategy(d, title, desc, pit, draw(st.none() | st.sampled_from(["ew_fused_vec4"])))
        h.strategy_attrs(sid)["gain_sum"] = draw(st.floats(-1e6, 1e6, allow_nan=False))
    for why in draw(st.lists(texts, max_size=3)):
        h.add_note("vectorization", draw(st.sampled_from(h.directions())),
                   {"when": "", "why": why, "risk": "", "source": "veto", "session": "s", "step": 1})
    h.merged = draw(st.dictionaries(st.text(min_size=1, max_size=8), st.lists(st.integers(1, 99), max_size=4),
                                    max_size=3))
    return h


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories())
def test_random_memories_survive_plain_data_and_msgpack(h):
    data = h.to_data()
    again = HTG.from_data(unpack(pack(data)))
    assert again == h and again.to_data() == data
    # the derived per-level aggregates are rebuilt, not stored, and agree
    for a, b, e in h.transition_edges():
        assert again.edge(a, b)["agg"] == e["agg"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(memories())
def test_random_memories_survive_a_bank_file(tmp_path, h):
    p = tmp_path / "m.htgbank"
    save_bank(h, p)
    assert load_bank(p) == h
