"""The memory bank file: seed when missing, round trip, clear errors on bad files."""

import random

import pytest
from htg_builders import grow

from htam_engine.errors import InputError
from htam_engine.memory import HTG, BankFileError, default_bank_path, load_bank, save_bank


def test_missing_bank_is_the_seed_and_a_saved_bank_loads_back(tmp_path):
    p = tmp_path / "sub" / "memory.htgbank"
    assert load_bank(p) == HTG.seed()
    h = grow(HTG.seed(), random.Random(1), 50, 300, notes=5)
    h.merged = {"s1": [1, 2, 3]}
    save_bank(h, p)
    assert load_bank(p) == h
    assert [x.name for x in p.parent.iterdir()] == ["memory.htgbank"]  # no temp files left


def test_default_bank_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HTAM_SESSIONS_DIR", str(tmp_path / "s"))
    monkeypatch.delenv("HTAM_BANK", raising=False)
    assert default_bank_path() == tmp_path / "s" / "memory.htgbank"
    monkeypatch.setenv("HTAM_BANK", str(tmp_path / "b.bank"))
    assert default_bank_path() == tmp_path / "b.bank"


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "text", "session"])
def test_a_damaged_bank_gives_one_clear_error_and_stays_untouched(tmp_path, damage):
    p = tmp_path / "memory.htgbank"
    save_bank(HTG.seed(), p)
    raw = p.read_bytes()
    bad = {"truncate": raw[: len(raw) // 2], "flip": raw[:-100] + bytes([raw[-100] ^ 0x10]) + raw[-99:],
           "empty": b"", "text": b"hello world\n", "session": None}[damage]
    if bad is None:
        from htam_engine.storage import write_envelope

        write_envelope(p, "htam-session", 2, {"x": 1})
        bad = p.read_bytes()
    p.write_bytes(bad)
    with pytest.raises(BankFileError) as err:
        load_bank(p)
    assert isinstance(err.value, InputError) and str(p) in str(err.value) and "\n" not in str(err.value)
    assert p.read_bytes() == bad


WRONG = {
    "prior a list": lambda d: d["directions"]["prior"].__setitem__(0, [1]),
    "title a number": lambda d: d["strategies"]["title"].__setitem__(3, 7),
    "tries a string": lambda d: d["strategies"]["tries"].__setitem__(0, "many"),
    "short column": lambda d: d["strategies"]["pitfalls"].pop(),
    "ctx rows": lambda d: d["strategies"]["ctx"].__setitem__(0, {"a|b": [1]}),
    "bucket index": lambda d: d["transitions"]["bucket"].__setitem__(0, 10**6),
    "reward text": lambda d: d["transitions"]["sum"].__setitem__(0, "lots"),
    "notes not maps": lambda d: d["edges"]["notes"].__setitem__(0, ["x"]),
    "merged": lambda d: d.__setitem__("merged", {"s": "all"}),
    "unknown direction": lambda d: d["strategies"]["direction"].__setitem__(0, "elsewhere"),
    "schema": lambda d: d.__setitem__("schema", 99),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_wrong_types_inside_a_bank_are_caught_at_load(tmp_path, case):
    from htam_engine.storage import write_envelope

    h = grow(HTG.seed(), random.Random(2), 5, 30)
    h.ensure_edge("data_reuse", "vectorization")["notes"].append({"why": "x"})
    d = h.to_data()
    WRONG[case](d)
    p = tmp_path / "m.htgbank"
    write_envelope(p, "htam-bank", 1, d)
    with pytest.raises(BankFileError, match="m.htgbank"):
        load_bank(p)
