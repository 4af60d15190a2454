"""Retrieval: top-k strategies of the chosen direction by fit and record, with the edges' notes."""

import random

from htam_engine.memory import HTG, HistoryEntry, make_state, retrieve, select_direction

ROW = make_state("ok", "reduction", "cuda", "memory", 1.2)


def test_strategies_come_from_the_direction_ranked_by_fit():
    h = HTG.seed()
    r = retrieve(h, "reduction_strategy", ROW, k=3)
    assert len(r.strategies) == 3 and all(v.direction == "reduction_strategy" for v in r.strategies)
    assert [v.score for v in r.strategies] == sorted((v.score for v in r.strategies), reverse=True)
    cuda_state, cpp_state = (make_state("ok", "elementwise", b, "memory", 1.2) for b in ("cuda", "cpp"))
    # a strategy for other backends fits a CPU run worse and drops below those that apply
    fits = {b: {v.title: v.fit for v in retrieve(h, "parallel_mapping", st, k=20).strategies}
            for b, st in (("cuda", cuda_state), ("cpp", cpp_state))}
    assert fits["cpp"]["Tune block size for occupancy"] == fits["cuda"]["Tune block size for occupancy"] - 1.0
    top_cpp = retrieve(h, "parallel_mapping", cpp_state, k=1).strategies[0]
    assert top_cpp.title in ("Grid-stride loop with a device-sized grid", "Parallelize outer loops over CPU cores")


def test_record_lifts_a_strategy_that_worked_for_this_family_and_backend():
    h = HTG.seed()
    last = retrieve(h, "reduction_strategy", ROW, k=10).strategies[-1]
    a = h.strategy_attrs(last.id)
    a.update(tries=10, successes=9, gain_sum=6.0)
    a["ctx"]["reduction|cuda"] = [10, 9, 6.0]
    top = retrieve(h, "reduction_strategy", ROW, k=1).strategies[0]
    assert top.id == last.id and top.tries == 10 and top.mean_gain == 0.6


def test_notes_are_those_of_the_edges_the_selection_attended_to():
    h = HTG.seed()
    sel = select_direction(h, ROW, [HistoryEntry(ROW, "data_reuse")], rng=random.Random(0), forced="memory_access")
    r = retrieve(h, "memory_access", ROW, selection=sel)
    assert [(n.from_direction, n.to_direction) for n in r.notes] == [("data_reuse", "memory_access")]
    assert retrieve(h, "memory_access", ROW, from_directions=["vectorization"]).notes == []
    every = retrieve(h, "correctness_repair", ROW).notes
    assert len({n.from_direction for n in every}) >= 12


def test_flat_retrieval_ranks_all_strategies_across_directions():
    h = HTG.seed()
    r = retrieve(h, "memory_access", ROW, k=8, ablation="flat")
    assert len({v.direction for v in r.strategies}) > 1 and r.notes == []
