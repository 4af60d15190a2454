"""When and how long to wait before asking the endpoint again.

Retried: timeouts (whole request or a stream that stalls), connection errors, HTTP 408,
409, 429 and 5xx, streams cut off halfway, malformed responses. Not retried: other 4xx
(a bad key, an unknown model, a request the server rejects will not get better).
Delays grow exponentially with "equal jitter" (half fixed, half random) up to a cap;
a server's `Retry-After` (seconds or an HTTP date, or `retry-after-ms`) is a floor.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Mapping

import openai

from htam_engine.propose.redact import redact

RETRY_STATUS = {408, 409, 429}
MAX_RETRY_AFTER_S = 600.0  # a longer Retry-After is capped to this


@dataclass(slots=True)
class Fault:
    """A failed attempt, classified."""

    kind: str  # timeout | connection | rate_limit | server | stream_cut | malformed | client
    message: str  # one line, redacted
    retryable: bool
    retry_after_s: float | None = None
    status: int | None = None


@dataclass(slots=True)
class RetryPolicy:
    retries: int = 4
    base_s: float = 1.0
    max_s: float = 30.0

    def delay(self, attempt: int, fault: Fault, rng: random.Random) -> float:
        """Seconds to wait before attempt `attempt + 1` (attempt counts from 0)."""
        ceiling = min(self.max_s, self.base_s * (2**attempt))
        wait = ceiling / 2 + rng.uniform(0, ceiling / 2)
        if fault.retry_after_s is not None:
            # Never earlier than asked; a little jitter on top keeps clients from stampeding.
            wait = fault.retry_after_s + rng.uniform(0, min(0.25, self.base_s))
        return wait


class StreamCut(Exception):
    """The stream ended before the reply was complete."""


class StreamStalled(Exception):
    """No data arrived for longer than the stall timeout."""


def classify(exc: BaseException, mid_stream: bool = False) -> Fault:
    """What kind of fault `exc` is; messages are redacted and kept to one line.
    `mid_stream`: part of the reply had already arrived (a connection lost then is a cut stream)."""
    msg = _one_line(exc)
    if isinstance(exc, (StreamStalled, TimeoutError, openai.APITimeoutError)):
        return Fault("timeout", f"timed out: {msg}" if msg else "timed out", True)
    if isinstance(exc, StreamCut):
        return Fault("stream_cut", f"stream cut off: {msg}", True)
    if isinstance(exc, openai.APIConnectionError):
        if mid_stream:
            return Fault("stream_cut", f"stream cut off: {msg}", True)
        return Fault("connection", f"connection error: {msg}", True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = parse_retry_after(exc.response.headers if exc.response is not None else {})
        if status == 429:
            return Fault("rate_limit", f"HTTP 429 (rate limited): {msg}", True, retry_after, status)
        if status >= 500 or status in RETRY_STATUS:
            return Fault("server", f"HTTP {status} (server error): {msg}", True, retry_after, status)
        return Fault("client", f"HTTP {status}: {msg}", False, None, status)
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        # ValueError covers json.JSONDecodeError from a malformed body or SSE event.
        return Fault("malformed", f"malformed response: {msg}", True)
    if isinstance(exc, openai.APIError):
        return Fault("server", f"API error: {msg}", True)
    # Transport errors raised while reading a stream (the socket closed mid-body) come
    # from the HTTP library underneath openai, whose classes we do not import.
    name = type(exc).__name__
    if any(word in name for word in ("Protocol", "Read", "Network", "Connect", "Transport", "Incomplete")):
        return Fault("stream_cut", f"stream cut off: {name}: {msg}", True)
    return Fault("client", f"{name}: {msg}", False)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or HTTP date); None if absent/bad."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms:
        try:
            return _bounded(float(ms) / 1000)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return _bounded(float(value))
    except ValueError:
        pass
    try:
        return _bounded(parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _bounded(seconds: float) -> float | None:
    if seconds != seconds or seconds < 0:
        return 0.0 if seconds == seconds else None
    return min(seconds, MAX_RETRY_AFTER_S)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return redact(text[:400] + (" ..." if len(text) > 400 else ""))
