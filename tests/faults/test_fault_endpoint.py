"""Model endpoint faults against the loopback server, through `htam run --proposer model`:
refused connections, 429 storms, 5xx, stalls, truncated streams, malformed JSON, replies with
no code and with huge code. No crash, bounded retries, a clear failure on each step, and the
session ends cleanly at its step budget with every step saved."""

from __future__ import annotations

import json
import time

import pytest
from fault_support import NO_KERNEL, PROBLEM, fenced

from htam_engine.cli import main
from htam_engine.session import load_session
from tests.support.loopback_server import LoopbackServer, Reply

STEPS = 3
RETRIES = 2
# Short client timeouts so a stall or a slow storm costs seconds, not minutes.
CONFIG = f"""
[model]
timeout_s = 4.0
connect_timeout_s = 1.0
stall_timeout_s = 1.0
retries = {RETRIES}
backoff_base_s = 0.05
backoff_max_s = 0.2
reflect = false
"""
HUGE = fenced(NO_KERNEL + "".join(f"# padding line {i:07d} {'x' * 60}\n" for i in range(60_000)))  # ~5 MB

FAULTS = {
    "refused": None,  # the server is stopped before the run: connections are refused
    "429_storm": Reply(status=429, retry_after=0.05),
    "500": Reply(status=500),
    "503": Reply(status=503),
    "stall": Reply(fenced(NO_KERNEL), stall_after=20, stall_s=20.0),
    "truncated": Reply(fenced(NO_KERNEL), cut_after=30),
    "malformed_json": Reply(fenced(NO_KERNEL), malformed=True),
    "no_code": Reply("I would rather not write a kernel today."),
    "huge_code": Reply(HUGE, chunk_chars=65536),
}
# Faults the client must retry (each attempt is one request); none may exceed 1 + RETRIES.
RETRIED = {"429_storm", "500", "503", "stall", "truncated"}


def _run(tmp_path, monkeypatch, capsys, server: LoopbackServer, *extra: str) -> tuple[int, dict | None, str]:
    cfg = tmp_path / "htam.toml"
    cfg.write_text(CONFIG)
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-endpoint-faults", "HTAM_MODEL": "loopback-model",
           "HTAM_CONFIG": str(cfg), "HTAM_SESSIONS_DIR": str(tmp_path / "sessions"),
           "HTAM_BANK": str(tmp_path / "bank.htgbank")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)  # no ./htam.toml of the checkout's
    session = tmp_path / "s.htam"
    code = main(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", str(STEPS),
                 "--session", str(session), "--no-bank", "--trials", "2", "--no-compile-baseline", "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_endpoint_fault_fails_steps_clearly_and_the_session_ends_at_its_budget(fault, tmp_path, monkeypatch, capsys, figures):
    reply = FAULTS[fault]
    server = LoopbackServer(default=reply or Reply("unused")).start()
    if reply is None:
        server.stop()
    ok = False
    try:
        t0 = time.monotonic()
        code, doc, err = _run(tmp_path, monkeypatch, capsys, server)
        wall = time.monotonic() - t0
        assert code == 0, err[-2000:]
        assert "Traceback" not in err
        assert doc is not None and [s["step"] for s in doc["steps"]] == list(range(1, STEPS + 1))
        assert doc["config"]["extra"].get("finished") == "steps"
        assert len(load_session(tmp_path / "s.htam").steps) == STEPS  # every step saved
        if fault == "huge_code":  # the code arrived and was judged; the next prompt stayed bounded
            assert all(s["status"] == "rejected" for s in doc["steps"]), doc["steps"]
            sizes = [len(json.dumps(r.body)) for r in server.chat_requests()]
            assert max(sizes) < 400_000, sizes
        else:  # no candidate: each step says why, in one line
            failures = [line for line in err.splitlines() if "no candidate" in line]
            assert len(failures) >= STEPS, err[-3000:]
            assert all(len(line) < 600 for line in failures)
            for s in doc["steps"]:
                assert s["status"] == "no_candidate" and s["failure"] and "\n" not in s["failure"], s
        attempts = len(server.chat_requests())
        bound = STEPS * (1 + RETRIES)
        assert attempts <= bound, f"{attempts} requests for {STEPS} steps (bound {bound})"
        if fault in RETRIED:
            assert attempts > STEPS  # the client did retry
        assert wall < 120
        ok = True
    finally:
        server.stop()
        figures.add("model endpoint faults", tried=1, survived=int(ok), note=fault)


def test_a_flaky_endpoint_stops_cleanly_at_the_token_budget(tmp_path, monkeypatch, capsys, figures):
    """Faults mixed with good replies: the run spends its token budget and stops there."""
    server = LoopbackServer([Reply(status=503), Reply(fenced(NO_KERNEL), cut_after=40),
                             Reply(fenced(NO_KERNEL), completion_tokens=500)],
                            default=Reply(fenced(NO_KERNEL), completion_tokens=500)).start()
    try:
        code, doc, err = _run(tmp_path, monkeypatch, capsys, server, "--steps", "10", "--token-budget", "900")
    finally:
        server.stop()
    ok = code == 0 and doc is not None and doc["config"]["extra"].get("finished") == "tokens"
    figures.add("model endpoint faults", tried=1, survived=int(ok), note="flaky endpoint, token budget")
    assert ok, (code, err[-2000:])
    assert "Traceback" not in err and 1 <= len(doc["steps"]) < 10
    assert len(load_session(tmp_path / "s.htam").steps) == len(doc["steps"])
