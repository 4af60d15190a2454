"""Session operations: memory replay, branch, resume, export, summary, listing, bank merge."""

import json
import random

import pytest
from session_builders import add_steps, build_session, problem

from htam_engine.memory import HTG, merge_session
from htam_engine.session import (
    SessionConfig, SessionError, SessionFileError, StepRangeError, branch_session, export_best, list_sessions, load_session,
    memory_at, new_session, save_session, summarize,
)


@pytest.fixture(scope="module")
def built():
    return build_session(10, seed=5, vetoes=0.1)


def test_memory_at_replays_the_deltas(built):
    s, live = built
    assert memory_at(s, 0) == HTG.seed()
    assert memory_at(s, 10) == live
    assert memory_at(s, 4) != memory_at(s, 5)
    with pytest.raises(StepRangeError):
        memory_at(s, 11)


def test_branch_keeps_steps_and_memory_up_to_k(tmp_path, built):
    s, _ = built
    p = tmp_path / "run.htam"
    save_session(s, p)
    child_path = branch_session(p, 4)
    assert child_path == tmp_path / "run.branch4.htam"
    child = load_session(child_path)
    assert child.id != s.id and child.parent == {"session": str(p), "step": 4, "id": s.id}
    assert child.steps == s.steps[:4]
    assert memory_at(child, 4) == memory_at(s, 4)
    best4 = max((r.outcome.result.speedup_eager for r in s.steps[:4]
                 if r.outcome.result and r.outcome.result.ok), default=None)
    assert (child.best_result.speedup_eager if child.best_result else None) == best4
    assert branch_session(p, 4) == tmp_path / "run.branch4-2.htam"
    empty = load_session(branch_session(p, 0, tmp_path / "fresh.htam"))
    assert empty.steps == [] and empty.best_result is None
    with pytest.raises(StepRangeError):
        branch_session(p, 11)
    assert load_session(p) == s  # the parent is untouched


def test_resume_continues_appending_where_the_file_stopped(tmp_path):
    mem = HTG.seed()
    s = new_session(problem(), SessionConfig(), mem)
    p = tmp_path / "r.htam"
    add_steps(s, mem, 6, random.Random(1), path=p)  # saved after every step
    again = load_session(p)  # a new process picks the file up
    htg = memory_at(again, len(again.steps))
    assert again == s and htg == mem
    add_steps(again, htg, 4, random.Random(2), path=p)
    final = load_session(p)
    assert len(final.steps) == 10 and final.steps[:6] == s.steps
    assert [r.step for r in final.steps] == list(range(1, 11))
    assert memory_at(final, 10) == htg


def test_export_writes_the_best_module(tmp_path, built):
    s, _ = built
    out = export_best(s, tmp_path / "sol.py")
    text = out.read_text()
    assert text.startswith("# htam solution for builtin:relu_scale")
    assert text.endswith(s.best_code) and "class ModelNew" in text
    compile(text, str(out), "exec")
    fresh = new_session(problem(), SessionConfig(), HTG.seed())
    with pytest.raises(SessionError, match="no correct candidate"):
        export_best(fresh, tmp_path / "none.py")


def test_summary_is_one_json_document_with_the_contract_fields(built):
    s, _ = built
    doc = json.loads(json.dumps(summarize(s, "x.htam")))
    assert {"session", "problem", "steps", "best", "parent"} <= doc.keys()
    assert doc["session"] == s.id and len(doc["steps"]) == 10
    st = doc["steps"][0]
    assert {"step", "direction", "status", "speedup_eager", "reward", "decision", "strategies"} <= st.keys()
    assert doc["best"]["status"] == "ok" and doc["best"]["speedup_eager"] == s.best_result.speedup_eager


def test_list_sessions_reports_unreadable_files(tmp_path, built):
    s, _ = built
    save_session(s, tmp_path / "a.htam")
    (tmp_path / "broken.htam").write_bytes(b"\x93oops")
    (tmp_path / "notes.txt").write_text("not a session")
    rows = list_sessions(tmp_path)
    assert len(rows) == 2
    good = next(r for r in rows if "error" not in r)
    assert (good["session"], good["problem"], good["steps"]) == (s.id, "builtin:relu_scale", 10)
    assert good["best_speedup"] == s.best_result.speedup_eager
    bad = next(r for r in rows if "error" in r)
    assert "broken.htam" in bad["error"]
    with pytest.raises(SessionFileError, match="no such folder"):
        list_sessions(tmp_path / "nowhere")


def test_merge_into_the_bank_is_idempotent_and_counts_add_up(tmp_path, built):
    s, _ = built
    bank = HTG.seed()
    assert merge_session(bank, s) == 10
    snapshot = bank.to_data()
    assert merge_session(bank, s) == 0 and bank.to_data() == snapshot
    assert bank.counts()["experience"] == sum(1 for r in s.steps if r.memory_delta.get("transitions"))
    # a branch shares its parent's first steps: merging it adds only its own new steps
    p = tmp_path / "p.htam"
    save_session(s, p)
    child = load_session(branch_session(p, 3))
    mem = memory_at(child, len(child.steps))
    add_steps(child, mem, 2, random.Random(9))
    assert merge_session(bank, child) == 2
    other, _ = build_session(4, seed=11)
    assert merge_session(bank, other) == 4
    assert bank.counts()["sessions_merged"] == 3


def test_concurrent_merges_into_one_bank_lose_nothing(tmp_path):
    """Several processes finishing sessions at once: the lock serializes load-merge-save."""
    import os

    from htam_engine.memory import load_bank, merge_into_bank

    bank = tmp_path / "memory.htgbank"
    sessions = [build_session(3, seed=20 + i)[0] for i in range(4)]
    pids = []
    for s in sessions:
        pid = os.fork()
        if pid == 0:
            try:
                merge_into_bank(s, bank)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    merged = load_bank(bank)
    assert sorted(merged.merged) == sorted(s.id for s in sessions)
    assert merged.counts()["experience"] == 12
    assert merge_into_bank(sessions[0], bank) == 0


def test_a_password_in_the_endpoint_url_never_reaches_the_session(tmp_path):
    cfg = SessionConfig(proposer="model", base_url="https://me:hunter2secret@llm.example/v1")
    s = new_session(problem(), cfg, HTG.seed(), path=tmp_path / "k.htam")
    assert "hunter2secret" not in s.config.base_url and "llm.example" in s.config.base_url
    assert b"hunter2secret" not in (tmp_path / "k.htam").read_bytes()
    assert cfg.base_url.endswith("@llm.example/v1")  # the caller's config is left alone
