"""The API key never reaches a proposal, a session file, an export, a log or an error message."""

from __future__ import annotations

import json
import logging

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.propose.base import Proposal
from htam_engine.propose.model import ModelProposer
from htam_engine.propose.redact import redact
from tests.support.loopback_server import Reply


def _grep(root, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def test_key_is_absent_from_everything_saved(loopback, model_config, kit, tmp_path, caplog):
    key = kit.TEST_KEY
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's included
    loopback.add(
        Reply(status=500, error_message=f"upstream rejected Authorization: Bearer {key}"),  # a proxy echoing the header
        Reply(kit.fenced(kit.GOOD_CODE)),
        Reply(status=401, error_message=f"invalid api key {key}"),
        Reply(status=503),
        Reply(status=503),
        Reply(status=503),
        Reply(status=503),
    )
    proposer = ModelProposer(model_config.model)
    ok = await proposer.propose(kit.make_request())
    refused = await proposer.propose(kit.make_request())
    assert ok.code is not None and refused.code is None
    assert loopback.chat_requests()[0].headers.get("authorization") == f"Bearer {key}"  # it was really sent
    lesson_request = kit.make_request()
    failed_reflection = await proposer.reflect(lesson_request, ok.code, EvalResult(status=Status.OK))
    assert failed_reflection is None

    out = tmp_path / "saved"
    out.mkdir()
    _save_session(out, model_config, [ok, refused], kit)
    (out / "proposals.json").write_text(json.dumps([_plain(p) for p in (ok, refused)]))
    (out / "config.json").write_text(json.dumps(model_config.model.to_dict()))
    (out / "log.txt").write_text("\n".join(r.getMessage() for r in caplog.records) + "\n" + caplog.text)
    (out / "reprs.txt").write_text("\n".join(map(repr, (model_config, proposer, ok, refused))))
    assert "invalid api key [redacted]" in refused.failure
    assert _grep(out, key) == []
    assert _grep(out, key[len("sk-") : -6]) == []  # no fragment of it either


def test_redact_masks_registered_and_secret_shaped_values(kit):
    from htam_engine.propose.config import Secret

    Secret("plain-registered-secret-value")
    text = redact("a plain-registered-secret-value b sk-abcdefghijklmnopqrstuvwx c Bearer abc.def-ghi_jkl d api_key=zzzzzzzzzzzz")
    assert text == "a [redacted] b [redacted] c Bearer [redacted] d api_key=[redacted]"
    assert redact("ordinary text with a short sk-1 token") == "ordinary text with a short sk-1 token"
    assert redact("http://user:hunter2pass@host:8000/v1 and http://host:8000/v1") == "http://user:[redacted]@host:8000/v1 and http://host:8000/v1"


def test_credentials_in_the_base_url_stay_out_of_the_settings_dict(tmp_path):
    from htam_engine.propose.config import load_config

    cfg = load_config({"base_url": "https://bob:s3cretpass@llm.example/v1?api-key=0123456789abcdef"}, env={}, user_file=tmp_path / "u", project_file=tmp_path / "p")
    shown = cfg.model.to_dict()["base_url"]
    assert "s3cretpass" not in shown and "0123456789abcdef" not in shown and shown.startswith("https://bob:[redacted]@llm.example/v1")


def _plain(p: Proposal) -> dict:
    from dataclasses import asdict

    return asdict(p)


def _save_session(folder, model_config, proposals, kit) -> None:
    """Save a real session file holding the proposals (the memory+sessions store writes it)."""
    from htam_engine.session import Candidate, ProblemRef, Session, SessionConfig, StepRecord, save_session

    request = kit.make_request()
    config = SessionConfig(proposer="model", model=model_config.model.model, base_url=model_config.model.base_url, extra={"model": model_config.model.to_dict()})
    candidates = [
        Candidate(sample=i, code=p.code, prompt=p.prompt, model_output=p.raw_output, failure=p.failure, usage=p.usage)
        for i, p in enumerate(proposals)
    ]
    step = StepRecord(step=1, state=request.state, selection=request.selection, retrieval=request.retrieval, candidates=candidates)
    session = Session(id="s1", problem=ProblemRef(request.problem.id, request.problem.source), config=config, memory_initial={}, steps=[step])
    save_session(session, folder / "s1.htam")
