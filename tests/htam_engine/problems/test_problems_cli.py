"""`htam problems`: built-in suite and KernelBench listings, table and --json."""

from __future__ import annotations

import json
import time

import pytest
from tests.conftest import kernelbench_root

from htam_engine.problems import builtin_names

from problems_support import GOOD, problems_cli, write_problem  # noqa: F401 - fixtures


def test_builtin_json_lists_the_suite(problems_cli, capsys):
    assert problems_cli(["builtin", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [f"builtin:{n}" for n in builtin_names()]
    row = rows[0]
    assert {"id", "path", "level", "family", "inputs", "error"} <= set(row)
    assert row["error"] is None and row["inputs"][0]["shape"]


def test_table_shows_id_level_family_and_shapes(problems_cli, capsys):
    assert problems_cli(["cross_entropy", "--set", "batch_size=7"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.split()[:3] == ["builtin:cross_entropy", "L1", "reduction"]
    assert "7x1000 float32" in line and "7 int64" in line


def test_bad_set_is_usage_error(problems_cli):
    assert problems_cli(["relu", "--set", "oops"]) == 2


def test_folder_is_searched_recursively(problems_cli, write_problem, capsys):
    write_problem(GOOD, "level2/a/first.py")
    path = write_problem(GOOD, "level2/b/second.py")
    assert problems_cli([str(path).rsplit("/level2/", 1)[0], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["id"] for r in rows) == ["first", "second"]
    assert {r["level"] for r in rows} == {2}


def test_kernelbench_levels_1_to_3_all_list(problems_cli, capsys):
    root = kernelbench_root()
    if root is None:
        pytest.skip("HTAM_KERNELBENCH not set")
    start = time.monotonic()
    code = problems_cli([str(root / "level1"), str(root / "level2"), str(root / "level3"), "--json"])
    elapsed = time.monotonic() - start
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(rows) == 250
    assert [r for r in rows if r["error"]] == []
    assert len({r["id"] for r in rows}) == 250
    assert all(r["id"].startswith("kernelbench:level") for r in rows)
    assert elapsed < 120  # meta-device shapes: no multi-GB allocations


def test_json_stays_one_document_when_a_file_prints(problems_cli, write_problem, capsys):
    path = write_problem("print('hello from the problem')\n" + GOOD.replace("def get_inputs():", "def get_inputs():\n    print('drawing')"))
    assert problems_cli([path, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["inputs"][0]["shape"] == [8, 16]
    assert "hello from the problem" in captured.err
