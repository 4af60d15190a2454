"""A judge loads a problem once: one parse, one run of its module and one of its unseen-shape
variant, for the first evaluation of it; none for the next ones."""

from __future__ import annotations

from cheats.harness import _problem, run_check
from htam_engine.evaluate.result import Status
from htam_engine.problems import loader


def test_a_problem_is_parsed_once_and_run_twice_for_a_stream_of_evaluations(monkeypatch):
    overrides = {"dim": 192}  # a problem this run's judge has not loaded yet
    _problem("relu", tuple(overrides.items()))  # the engine's own load of it, before counting
    parses, runs = [], []
    parse, execute = loader.parse_source, loader._execute_tree
    monkeypatch.setattr(loader, "parse_source", lambda *a, **k: parses.append(a[1]) or parse(*a, **k))
    monkeypatch.setattr(loader, "_execute_tree", lambda *a, **k: runs.append(a[2]) or execute(*a, **k))
    first = run_check("relu", "honest_relu_triton", overrides)
    assert first.status is Status.OK, first.diagnostics.message
    assert len(parses) == 1 and len(runs) == 2, (parses, runs)
    assert runs[0] == overrides and runs[1]["dim"] != 192  # the file as given, then its unseen shape
    again = run_check("relu", "cheat_identity", overrides)
    assert again.status is Status.INCORRECT
    assert len(parses) == 1 and len(runs) == 2
