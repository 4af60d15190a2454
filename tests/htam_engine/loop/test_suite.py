"""What `htam batch` runs: suites from names, folders and list files; levels, limits, overrides;
and several problems in flight at once."""

from __future__ import annotations

import json

from loop_support import DATA, PROBLEM_PATH

from htam_engine.loop.batch import Batch, BatchSpec
from htam_engine.loop.suite import load_suite


def test_list_files_levels_limit_and_per_problem_overrides(tmp_path):
    listing = tmp_path / "list.txt"
    broken = tmp_path / "broken.py"
    broken.write_text("class Model:\n")
    listing.write_text(f"# mine\n{PROBLEM_PATH}\nbuiltin:relu\n{broken}\nbuiltin:mlp\n")
    suite = load_suite([str(listing)], overrides={"N": 64, "batch_size": 2})
    ids = [p.id for p in suite.problems]
    assert ids[1:] == ["builtin:relu", "builtin:mlp"] and len(suite.broken) == 1
    mine, relu = suite.problems[0], suite.problems[1]
    assert mine.overrides == {"N": 64} and mine.inputs[0].shape == [64]  # only the constants it has
    assert relu.overrides == {"batch_size": 2} and relu.inputs[0].shape[0] == 2
    assert [p.id for p in load_suite([str(listing)], levels={3}).problems] == ["builtin:mlp"]
    assert len(load_suite(["builtin"], limit=4).problems) == 4
    folder = load_suite([str(DATA)])
    assert [p.name for p in folder.problems] == ["scale_relu"] and folder.broken  # the candidate file is no problem


async def test_problems_in_flight_together_each_get_their_session(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-suite-test")
    monkeypatch.setenv("HTAM_MODEL", server.script.model)
    monkeypatch.setenv("HTAM_CONFIG", str(tmp_path / "none.toml"))
    suite = load_suite([str(PROBLEM_PATH), "builtin:relu", "builtin:gelu"])
    spec = BatchSpec(suites=[], out=str(tmp_path / "out"), steps=2, backend="triton", proposer="model", jobs=3)
    done = []
    doc = await Batch(spec).run(suite.problems, on_done=done.append)
    assert sorted(d.index for d in done) == [1, 2, 3] and all(not d.error for d in done)
    assert [r["steps"] for r in doc["rows"]] == [2, 2, 2]
    ledger = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert set(ledger["done"]) == {p.id for p in suite.problems}
    assert (tmp_path / "out" / "memory.htgbank").exists()
