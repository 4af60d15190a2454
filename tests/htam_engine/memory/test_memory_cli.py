"""`htam memory show`: the bank (or the seed when there is none), as text or one JSON document."""

import json

from htam_engine.cli import main
from htam_engine.memory import HTG, save_bank


def test_show_seed_and_a_saved_bank(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_BANK", str(tmp_path / "none.htgbank"))
    assert main(["memory", "show"]) == 0
    out = capsys.readouterr().out
    assert "the seed memory" in out and "data_reuse" in out
    h = HTG.seed()
    h.add_transition("operator_fusion", "vectorization", "faster|elementwise|memory|1-1.5", 3, 2, 0.9, 0.3)
    save_bank(h, tmp_path / "b.htgbank")
    assert main(["memory", "show", str(tmp_path / "b.htgbank"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exists"] and doc["counts"]["experience"] == 3 and len(doc["directions"]) == 12
    vec = next(d for d in doc["directions"] if d["id"] == "vectorization")
    assert vec["transitions"][0]["from_direction"] == "operator_fusion" and vec["transitions"][0]["count"] == 3


def test_a_broken_bank_exits_2_with_one_line(capsys, tmp_path):
    (tmp_path / "x.htgbank").write_bytes(b"nope")
    assert main(["memory", "show", str(tmp_path / "x.htgbank")]) == 2
    err = capsys.readouterr().err
    assert "x.htgbank" in err and err.count("\n") == 1
