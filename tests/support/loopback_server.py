"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and smoke runs.

It replays a script of replies (one per `POST /v1/chat/completions`, in order), records
every request, and injects faults on demand:

- `status`: answer with an HTTP error (429 with `retry_after`, 500, 503, 401, ...)
- `delay_s`: wait before answering (a slow response; longer than the client's timeout = a timeout)
- `stall_after` + `stall_s`: stream that many characters, then go silent
- `cut_after`: stream that many characters, then close the socket mid-body
- `malformed`: send a body / an SSE event that is not JSON
- refused connections: `stop()` the server; the port then refuses

Streaming (SSE, `stream_options.include_usage`) and plain JSON replies, `GET /v1/models`.
Standard library only. It stops by itself after `lifetime_s`.

    with LoopbackServer([Reply("```python\\n...```")]) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="k")

    python -m tests.support.loopback_server --script replies.json --port 8765
    python -m tests.support.loopback_server --reply broken.txt --default candidate.py --port 8765
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_LIFETIME_S = 900.0


@dataclass
class Reply:
    """One scripted answer (and the fault to inject with it)."""

    content: str = ""
    reasoning: str = ""  # sent first as `reasoning_content` (as reasoning models' servers do)
    status: int = 200
    retry_after: float | None = None  # seconds, sent as the Retry-After header
    delay_s: float = 0.0  # before the response starts
    chunk_chars: int = 24  # characters per streamed chunk
    chunk_delay_s: float = 0.0  # between streamed chunks
    stall_after: int | None = None  # characters streamed before going silent
    stall_s: float = 0.0
    cut_after: int | None = None  # characters streamed before the socket is closed
    malformed: bool = False
    error_message: str = ""  # body text of an error reply (default: "scripted HTTP <status>")
    finish_reason: str = "stop"
    prompt_tokens: int | None = None  # reported usage; None = estimated from the text
    completion_tokens: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Reply":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown reply fields: {', '.join(sorted(unknown))}")
        return cls(**d)


@dataclass
class Recorded:
    """One request the server saw."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any
    at: float
    reply_index: int | None = None
    disconnected: bool = False  # the client went away while we were answering
    finished: bool = False  # the whole scripted answer was sent


@dataclass
class Script:
    replies: list[Reply]
    default: Reply | None = None  # answer once the script is used up (None: HTTP 400)
    model: str = "loopback-model"

    @classmethod
    def load(cls, path: str | Path) -> "Script":
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if isinstance(doc, list):
            doc = {"replies": doc}
        return cls(
            replies=[Reply.from_dict(r) if isinstance(r, dict) else Reply(str(r)) for r in doc.get("replies", [])],
            default=Reply.from_dict(doc["default"]) if doc.get("default") else None,
            model=doc.get("model", "loopback-model"),
        )


class LoopbackServer:
    def __init__(
        self,
        replies: Iterable[Reply | str] | Script = (),
        *,
        default: Reply | str | None = None,
        port: int = 0,
        lifetime_s: float = DEFAULT_LIFETIME_S,
        model: str = "loopback-model",
    ):
        if isinstance(replies, Script):
            self.script = replies
        else:
            self.script = Script([_reply(r) for r in replies], _reply(default) if default is not None else None, model)
        self.requests: list[Recorded] = []
        self._next = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._lifetime_s = lifetime_s
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "LoopbackServer":
        handler = type("Handler", (_Handler,), {"server_ref": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self._lifetime_s, self.stop)  # bounded: never outlives a run
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; later connections are refused."""
        self._stopping.set()  # wakes handlers that are stalling
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._timer is not None:
            self._timer.cancel()

    def __enter__(self) -> "LoopbackServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def running(self) -> bool:
        return self._httpd is not None

    # -- script ------------------------------------------------------------------------
    def add(self, *replies: Reply | str) -> None:
        with self._lock:
            self.script.replies.extend(_reply(r) for r in replies)

    def config_overrides(self) -> dict[str, Any]:
        """Settings pointing htam at this server (for `load_config(overrides)`)."""
        return {"base_url": self.base_url, "model": self.script.model}

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if _route(r.path) == "/v1/chat/completions"]

    def wait_for(self, predicate, timeout_s: float = 5.0) -> bool:
        """Poll until `predicate()` holds (for things the server notices asynchronously)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.01)
        return bool(predicate())

    def _take(self) -> tuple[int | None, Reply | None]:
        with self._lock:
            if self._next < len(self.script.replies):
                self._next += 1
                return self._next - 1, self.script.replies[self._next - 1]
            return None, self.script.default

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; True when stopped early."""
        return self._stopping.wait(seconds) if seconds > 0 else self._stopping.is_set()


def _reply(r: Reply | str) -> Reply:
    return r if isinstance(r, Reply) else Reply(str(r))


def _route(path: str) -> str:
    return path.split("?", 1)[0].rstrip("/")


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Handler(BaseHTTPRequestHandler):
    server_ref: LoopbackServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read self.requests instead
        return

    # -- routes ------------------------------------------------------------------------
    def do_GET(self) -> None:
        self.close_connection = True
        rec = self._record(None)
        if _route(self.path) == "/v1/models":
            model = self.server_ref.script.model
            self._json(200, {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "loopback"}]})
            rec.finished = True
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        rec = self._record(body)
        self.close_connection = True
        if _route(self.path) != "/v1/chat/completions":  # like real servers: only under /v1
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        index, reply = self.server_ref._take()
        rec.reply_index = index
        if reply is None:
            self._json(400, {"error": {"message": "loopback script exhausted", "type": "invalid_request_error"}})
            return
        try:
            self._answer(rec, body, reply)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            rec.disconnected = True
        finally:
            self.close_connection = True

    # -- answers -----------------------------------------------------------------------
    def _answer(self, rec: Recorded, body: dict, reply: Reply) -> None:
        srv = self.server_ref
        if srv._sleep(reply.delay_s):
            return
        if reply.status != 200:
            headers = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            self._json(reply.status, {"error": {"message": reply.error_message or f"scripted HTTP {reply.status}", "type": kind}}, headers)
            rec.finished = True
            return
        model = body.get("model") or srv.script.model
        prompt_text = "".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
        usage = {
            "prompt_tokens": reply.prompt_tokens if reply.prompt_tokens is not None else _estimate_tokens(prompt_text),
            "completion_tokens": reply.completion_tokens if reply.completion_tokens is not None else _estimate_tokens(reply.content),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(rec, model, reply, usage if include_usage else None)
            return
        if reply.malformed:
            self._raw(200, b'{"id": "chatcmpl-loop", "choices": [ {not json', "application/json")
            rec.finished = True
            return
        self._json(
            200,
            {
                "id": f"chatcmpl-loop{len(srv.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content, **({"reasoning_content": reply.reasoning} if reply.reasoning else {})}, "finish_reason": reply.finish_reason}],
                "usage": usage,
            },
        )
        rec.finished = True

    def _stream(self, rec: Recorded, model: str, reply: Reply, usage: dict | None) -> None:
        srv = self.server_ref
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": f"chatcmpl-loop{len(srv.requests)}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def event(choices: list, extra: dict | None = None) -> None:
            self._chunk(b"data: " + json.dumps({**base, "choices": choices, **(extra or {})}).encode() + b"\n\n")

        event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for i in range(0, len(reply.reasoning), max(1, reply.chunk_chars)):
            event([{"index": 0, "delta": {"reasoning_content": reply.reasoning[i : i + max(1, reply.chunk_chars)]}, "finish_reason": None}])
        text, sent = reply.content, 0
        step = max(1, reply.chunk_chars)
        while sent < len(text):
            piece = text[sent : sent + step]
            if reply.cut_after is not None and sent + len(piece) > reply.cut_after:
                piece = piece[: max(0, reply.cut_after - sent)]
                if piece:
                    event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
                self._cut()
                return
            if reply.malformed and sent > 0:
                self._chunk(b'data: {"choices": [ {"delta": not json\n\n')
                self._end_chunks()
                rec.finished = True
                return
            event([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            sent += len(piece)
            if reply.stall_after is not None and sent >= reply.stall_after and srv._sleep(reply.stall_s):
                return
            if srv._sleep(reply.chunk_delay_s):
                return
        if reply.cut_after is not None:  # cut at or past the end: still no finish and no [DONE]
            self._cut()
            return
        event([{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}])
        if usage is not None:
            event([], {"usage": usage})
        self._chunk(b"data: [DONE]\n\n")
        self._end_chunks()
        rec.finished = True

    # -- plumbing ----------------------------------------------------------------------
    def _record(self, body: Any) -> Recorded:
        rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
        with self.server_ref._lock:
            self.server_ref.requests.append(rec)
        return rec

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        self._raw(status, json.dumps(doc).encode(), "application/json", headers)

    def _raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")  # one request per connection: stop() really refuses
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        """Close the socket abruptly, mid-body (RST rather than an orderly end)."""
        self.wfile.flush()
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.connection.close()


try:  # the fixture is for pytest; script mode does not need pytest
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

if pytest is not None:

    @pytest.fixture
    def loopback():
        """A started LoopbackServer with an empty script (add replies with `.add(...)`)."""
        with LoopbackServer(lifetime_s=120) as server:
            yield server


def _file_reply(path: str) -> Reply:
    """A reply holding a file's text; a .py file is fenced as a model would send it."""
    text = Path(path).read_text(encoding="utf-8")
    return Reply(f"Here is the candidate.\n\n```python\n{text}```\n" if path.endswith(".py") else text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.support.loopback_server", description=__doc__.splitlines()[0])
    ap.add_argument("--script", help="JSON: a list of replies, or {replies, default, model}")
    ap.add_argument("--reply", action="append", default=[], metavar="FILE",
                    help="a reply from a file (a .py file is sent as a fenced module); repeatable, after --script's")
    ap.add_argument("--default", metavar="FILE", help="the reply once the script is used up (default: HTTP 400)")
    ap.add_argument("--model", help="model name the server reports")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=DEFAULT_LIFETIME_S, help="seconds before it stops by itself")
    args = ap.parse_args(argv)
    if not (args.script or args.reply or args.default):
        ap.error("give --script, --reply or --default")
    try:
        script = Script.load(args.script) if args.script else Script([])
        script.replies.extend(_file_reply(f) for f in args.reply)
        if args.default:
            script.default = _file_reply(args.default)
    except (OSError, ValueError, TypeError) as exc:
        print(f"loopback_server: {exc}", file=sys.stderr)
        return 2
    if args.model:
        script.model = args.model
    server = LoopbackServer(script, port=args.port, lifetime_s=args.lifetime).start()
    print(f"listening on {server.base_url}", flush=True)
    try:
        while server.running:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
