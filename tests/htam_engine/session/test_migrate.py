"""Format version 1 files (fixture written by the v1 writer) load through the migration."""

import shutil

from v1_writer import FIXTURE, v1_document, write_v1

from htam_engine.evaluate.result import Status
from htam_engine.session import load_session, memory_at, save_session, summarize


def test_v1_fixture_loads_as_a_current_session(tmp_path):
    p = tmp_path / "old.htam"
    shutil.copy(FIXTURE, p)
    before = p.read_bytes()
    s = load_session(p)
    assert p.read_bytes() == before  # loading never rewrites the file
    assert (s.id, s.problem.id, s.problem.overrides, s.config.model, s.config.policy) == \
        ("v1-session", "builtin:relu", {"N": 64}, "deepseek-r1", "ask")
    assert [r.selection.direction for r in s.steps] == ["operator_fusion", "vectorization"]
    assert s.steps[0].outcome.result.status is Status.COMPILE_ERROR
    assert s.steps[1].outcome.decision.reason == "looks right"
    assert [r.best_speedup for r in s.steps] == [None, 1.5]
    assert s.best_step == 2 and s.best_result.speedup_eager == 1.5 and "ModelNew" in s.best_code
    m0 = memory_at(s, 0)
    assert m0.strategy("operator_fusion/fuse_chain").tries == 3
    edge = m0.edge("operator_fusion", "vectorization")
    assert edge["stats"]["faster|elementwise|memory|1-1.5"] == [4, 3, 1.2, 1.2 * 1.2 / 4]
    assert m0.notes("operator_fusion", "vectorization")[0].why == "wider loads"
    m2 = memory_at(s, 2)
    assert m2.strategy("vectorization/float4").tries == 1
    assert summarize(s)["steps"][1]["speedup_eager"] == 1.5


def test_migrated_session_saves_in_the_current_format(tmp_path):
    p = tmp_path / "old.htam"
    write_v1(p)
    s = load_session(p)
    save_session(s, tmp_path / "new.htam")
    assert load_session(tmp_path / "new.htam") == s


def test_fixture_matches_the_v1_writer(tmp_path):
    write_v1(tmp_path / "again.htam")
    assert (tmp_path / "again.htam").read_bytes() == FIXTURE.read_bytes()
    assert v1_document()["format_version"] == 1
