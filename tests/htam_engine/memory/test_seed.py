"""The shipped seed schema: enough directions and actionable strategies, valid move ids, priors."""

from htam_engine.memory import HTG

REQUIRED = {"memory_access", "vectorization", "data_reuse", "parallel_mapping", "reduction_strategy",
            "operator_fusion", "launch_overhead", "instruction_throughput", "boundary_handling",
            "algorithmic_substitution", "precision_tensor_cores"}


def test_seed_has_the_global_directions_each_with_four_actionable_strategies():
    h = HTG.seed()
    assert REQUIRED <= set(h.directions())
    assert len(h.directions()) >= 11
    for d in h.directions():
        ids = h.strategy_ids(d)
        assert len(ids) >= 4, d
        for sid in ids:
            a = h.strategy_attrs(sid)
            assert len(a["description"]) > 60 and a["pitfalls"], sid
            assert isinstance(a["families"], list) and isinstance(a["backends"], list) and isinstance(a["states"], list)


def test_seed_moves_are_ones_the_offline_proposer_implements_and_all_are_used():
    """A strategy's template names an offline move of its own direction, and every move is reachable."""
    from htam_engine.propose.offline import MOVES

    h = HTG.seed()
    used = set()
    for sid in h.strategy_ids():
        a = h.strategy_attrs(sid)
        if a["template"] is not None:
            assert MOVES[a["template"]].direction == a["direction"], sid
            used.add(a["template"])
    assert used == set(MOVES)
    assert {m.direction for m in MOVES.values()} <= set(h.directions())


def test_seed_carries_expert_transition_notes():
    h = HTG.seed()
    notes = h.notes("data_reuse", "memory_access")
    assert notes and notes[0].source == "prior" and notes[0].why
    assert h.edge("operator_fusion", "vectorization")["prior"] > 0
    # fix correctness first: every direction has a prior note into correctness repair
    assert all(h.notes(d, "correctness_repair") for d in h.directions())


def test_seed_is_fresh_each_time():
    a, b = HTG.seed(), HTG.seed()
    a.strategy_attrs(a.strategy_ids()[0])["tries"] = 5
    assert b.strategy_attrs(b.strategy_ids()[0])["tries"] == 0


def test_a_bank_from_an_older_seed_gets_the_current_moves_and_strategies(tmp_path):
    from htam_engine.memory import load_bank, save_bank
    from htam_engine.memory.learn import upgrade_from_seed

    old = HTG.seed()
    sid = old.strategy_ids("reduction_strategy")[0]
    old.strategy_attrs(sid)["template"] = "row_reduce_online"  # an id of the replaced fixed templates
    old.strategy_attrs(sid)["tries"] = 3  # what it learned stays
    old.strategy_attrs(sid)["families"] = []  # a reduction move once offered to every family
    data = old.to_data()
    keep = [i for i, s in enumerate(data["strategies"]["id"]) if s != HTG.seed().strategy_ids("data_reuse")[0]]
    data["strategies"] = {k: [v[i] for i in keep] for k, v in data["strategies"].items()}  # a strategy added since
    path = save_bank(HTG.from_data(data), tmp_path / "old.htgbank")
    bank = load_bank(path)
    assert bank.strategy_attrs(sid)["template"] == HTG.seed().strategy_attrs(sid)["template"]
    assert bank.strategy_attrs(sid)["tries"] == 3
    assert "elementwise" not in bank.strategy_attrs(sid)["families"]
    assert sid not in {a["id"] for a in bank.members_for_family("reduction_strategy", "elementwise")}
    assert bank.has_strategy(HTG.seed().strategy_ids("data_reuse")[0])
    assert upgrade_from_seed(HTG.seed()) == HTG.seed()  # nothing to do for a current bank


def test_a_step_is_credited_to_the_strategy_whose_move_made_it():
    from htam_engine.memory.learn import credited
    from htam_engine.memory.types import StrategyView

    views = [StrategyView(id=f"d/{t}", direction="d", title=t, description="", template=t)
             for t in ("vector_width", None, "fast_math")]
    assert credited(views, "fast_math") == ["d/fast_math"]
    assert credited(views, None) == ["d/vector_width", "d/None", "d/fast_math"]  # a model read them all
