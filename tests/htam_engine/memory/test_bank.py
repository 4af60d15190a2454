"""The memory bank file: seed when missing, round trip, clear errors on bad files."""

import random

import pytest
from htg_builders import grow

from htam_engine.cli.errors import InputError
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
        from htam_engine.session.fileio import write_envelope

        write_envelope(p, "htam-session", 2, {"x": 1})
        bad = p.read_bytes()
    p.write_bytes(bad)
    with pytest.raises(BankFileError) as err:
        load_bank(p)
    assert isinstance(err.value, InputError) and str(p) in str(err.value) and "\n" not in str(err.value)
    assert p.read_bytes() == bad
