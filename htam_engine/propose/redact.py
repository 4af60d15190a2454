"""Keep API keys out of every text htam passes on (errors, logs, sessions, the screen).

One place: every key htam reads is registered here when it is loaded, and `redact()`
replaces registered keys plus anything shaped like a bearer token or an OpenAI-style
secret. Error text from the network layer goes through `redact()` before it leaves
the proposer.
"""

from __future__ import annotations

import re
import threading

MASK = "[redacted]"

_lock = threading.Lock()
_secrets: set[str] = set()

# Shapes of secrets that may reach us without having been registered (a server echoing
# a header, a key in a URL). Short tokens are left alone: they would mangle ordinary text.
_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-\.=:+/]{8,}"),
    re.compile(r"(?i)(api[_-]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]{8,}"),
    re.compile(r"(?i)(://[^/\s:@]+:)[^/\s@]+(?=@)"),  # a password in a URL: http://user:pass@host
]


def register_secret(value: str | None) -> None:
    """Remember a secret so that later `redact()` calls hide it (ignores empty/short values)."""
    if value and len(value) >= 4:
        with _lock:
            _secrets.add(value)


def redact(text: object, extra: tuple[str, ...] = ()) -> str:
    """`text` as a string with every known secret and secret-shaped token masked."""
    s = str(text)
    with _lock:
        known = sorted(_secrets | {e for e in extra if e and len(e) >= 4}, key=len, reverse=True)
    for secret in known:
        if secret in s:
            s = s.replace(secret, MASK)
    for pat in _PATTERNS:
        s = pat.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, s)
    return s
