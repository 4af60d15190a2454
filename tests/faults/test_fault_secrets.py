"""Secrets: the API key never appears in any file htam writes, in its logs, or on the screen.

A full session runs with the model proposer against the loopback server under a distinctive
key (one not shaped like an OpenAI key, so only htam's own bookkeeping can hide it), with
the endpoint echoing the key back in an error body; then every output is searched: session
file, memory bank, export, listings, stdout/stderr of each command, TMPDIR, the compile
cache, the prompts the server received, and the app's screen.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from fault_support import HONEST, NO_KERNEL, PROBLEM, ROOT, fenced

from tests.support.loopback_server import LoopbackServer, Reply

KEY = "htamkey-" + secrets.token_hex(12)


def _htam(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "htam_engine", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def _files_with(folder: Path, needle: bytes) -> list[str]:
    hits = []
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            try:
                if needle in p.read_bytes():
                    hits.append(str(p))
            except OSError:
                pass
    return hits


def test_api_key_appears_in_no_output_of_a_full_run(tmp_path, figures):
    work = tmp_path / "work"
    (work / "tmp").mkdir(parents=True)
    replies = [Reply(fenced(HONEST)), Reply(status=401, error_message=f"Incorrect API key provided: {KEY}"),
               Reply(fenced(NO_KERNEL)), Reply("no code in this reply")]
    ok = False
    try:
        with LoopbackServer(replies, default=Reply(fenced(NO_KERNEL))) as server:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(work / "tmp"), "OPENAI_API_KEY": KEY,
                   "OPENAI_BASE_URL": server.base_url, "HTAM_MODEL": "loopback-model", "HTAM_RETRIES": "0",
                   "HTAM_CONFIG": str(work / "none.toml"), "HTAM_SESSIONS_DIR": str(work / "sessions"),
                   "HTAM_BANK": str(work / "sessions" / "memory.htgbank"), "HTAM_CACHE_DIR": str(work / "cache")}
            session = work / "sessions" / "secret.htam"
            runs = [
                _htam(["run", str(PROBLEM), "--proposer", "model", "--backend", "triton", "--steps", "4", "--session",
                       str(session), "--trials", "2", "--no-compile-baseline", "--json"], env, work),
                _htam(["sessions", "show", str(session), "--json"], env, work),
                _htam(["sessions", "show", str(session)], env, work),
                _htam(["sessions", "list", str(work / "sessions"), "--json"], env, work),
                _htam(["sessions", "export", str(session), "--to", str(work / "solution.py")], env, work),
                _htam(["memory", "show", "--json"], env, work),
                _htam(["run", "--resume", str(session), "--steps", "1", "--json"], env, work),
            ]
            used = [r.headers.get("authorization", "") for r in server.chat_requests()]
            prompts = [str(r.body) for r in server.chat_requests()]
        assert runs[0].returncode == 0, runs[0].stderr[-2000:]
        assert any(KEY in h for h in used), "the key was never sent: the test would prove nothing"
        assert "refused" in runs[0].stderr or "401" in runs[0].stderr  # the echoing error was shown ...
        leaks = [f"{' '.join(r.args[3:6])}: {'stdout' if KEY in r.stdout else 'stderr'}"
                 for r in runs if KEY in r.stdout or KEY in r.stderr]
        leaks += [f"file {p}" for p in _files_with(work, KEY.encode())]
        leaks += ["a prompt sent to the model" for p in prompts if KEY in p]
        assert not leaks, leaks  # ... but never the key itself
        assert session.exists() and (work / "sessions" / "memory.htgbank").exists() and (work / "solution.py").exists()
        ok = True
    finally:
        figures.add("API key search in every output", tried=1, survived=int(ok))


async def test_api_key_never_reaches_the_screen(tmp_path, monkeypatch, figures):
    """The app on the real engine, with the endpoint echoing the key in an error: the screen
    shows the failure, never the key."""
    from htam_engine.loop.setup import RunSpec, open_engine
    from htam_tui.app import HtamApp, UiSettings

    from tests.htam_tui.screen_text import screen_text

    ok = False
    with LoopbackServer([Reply(status=401, error_message=f"Incorrect API key provided: {KEY}")],
                        default=Reply(fenced(NO_KERNEL))) as server:
        for k, v in {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url, "HTAM_MODEL": "loopback-model",
                     "HTAM_RETRIES": "0", "HTAM_CONFIG": str(tmp_path / "none.toml"),
                     "HTAM_SESSIONS_DIR": str(tmp_path)}.items():
            monkeypatch.setenv(k, v)
        # One step: its failure stays on the screen (a second step's own message could replace it
        # between two samples on a loaded machine).
        engine = open_engine(RunSpec(problem=str(PROBLEM), steps=1, backend="triton", proposer="model", policy="auto",
                                     session=str(tmp_path / "app.htam"), bank="", trials=2, compile_baseline=False))
        app = HtamApp(engine, sessions_dir=tmp_path, settings=UiSettings(bell=False, refresh_hz=50))
        seen: list[str] = []
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(600):
                    await pilot.pause(0.05)
                    seen.append(screen_text(app))
                    if engine.session.steps and "finished" in str(app.view.engine_state):
                        break
                seen.append(screen_text(app))
                await pilot.press("q")
            assert len(engine.session.steps) == 1, seen[-1]
            assert any("refused" in s or "401" in s for s in seen), "the endpoint's error never showed"
            assert not [s for s in seen if KEY in s], "the key was on the screen"
            assert KEY not in (tmp_path / "app.htam").read_bytes().decode("latin-1")
            ok = True
        finally:
            await engine.aclose()
            figures.add("API key search in every output", tried=1, survived=int(ok))
