"""Turning build and runtime output into something a person or a model can act on.

`parse_compiler_output` reads gcc/clang, nvcc, linker and Triton messages into
`CompilerMessage(file, line, column, message)`; `trim_log` keeps the useful ends of
long output; `BoundedLog` collects a worker's output without ever growing past a cap.
"""

from __future__ import annotations

import os
import re
import threading
import traceback

from htam_engine.evaluate.result import CompilerMessage

MAX_MESSAGES = 30
MAX_LINE = 400

# gcc / clang: "file:line:col: error: text" (column optional); "fatal error" counts as error.
_GCC = re.compile(r"^(?P<file>[^\s:][^:\n]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal\s+)?(?P<sev>error|warning|note)\s*:\s*(?P<msg>.*)$")
# nvcc: "file(line): error: text" or "file(line): warning #177-D: text"
_NVCC = re.compile(r"^(?P<file>[^\s(][^(\n]*)\((?P<line>\d+)\)\s*:\s*(?P<sev>error|warning|remark)[^:]*:\s*(?P<msg>.*)$")
# linker / loader faults carry no source position
_LINK = re.compile(r"(undefined reference to .*|undefined symbol: \S+|ld returned \d+ exit status|cannot find -l\S+)")
# Triton: "CompilationError: at 12:8:" followed by source and the message
_TRITON_AT = re.compile(r"(?:CompilationError|Error)[^\n]*?\bat (?P<line>\d+):(?P<col>\d+):")


def _clip(text: str, limit: int = MAX_LINE) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_compiler_output(text: str) -> list[CompilerMessage]:
    """Every recognisable diagnostic in `text`, errors first, duplicates dropped."""
    found: list[CompilerMessage] = []
    seen: set[tuple] = set()

    def add(msg: CompilerMessage) -> None:
        key = (msg.file, msg.line, msg.column, msg.message)
        if key not in seen:
            seen.add(key)
            found.append(msg)

    lines = text.splitlines()
    for raw in lines:
        line = raw.strip()
        m = _GCC.match(line) or _NVCC.match(line)
        if m:
            sev = m.group("sev")
            sev = "warning" if sev == "remark" else sev
            col = m.groupdict().get("col")
            add(CompilerMessage(message=_clip(m.group("msg")), file=os.path.basename(m.group("file")),
                                line=int(m.group("line")), column=int(col) if col else None, severity=sev))
            continue
        lm = _LINK.search(line)
        if lm:
            add(CompilerMessage(message=_clip(lm.group(1)), severity="error"))
    for m in _TRITON_AT.finditer(text):
        # The message follows the quoted source lines; the last non-empty line of the block says it.
        tail = [ln for ln in text[m.end():].splitlines()[:12] if ln.strip()]
        detail = next((ln for ln in reversed(tail) if not ln.startswith((" ", "\t", "^"))), tail[-1] if tail else "")
        add(CompilerMessage(message=_clip(detail or "Triton compilation error"), file="triton",
                            line=int(m.group("line")), column=int(m.group("col"))))
    order = {"error": 0, "warning": 1, "note": 2}
    found.sort(key=lambda c: order.get(c.severity, 3))
    return found[:MAX_MESSAGES]


def exception_messages(exc: BaseException, candidate_file: str | None) -> list[CompilerMessage]:
    """Diagnostics for an exception raised while importing a candidate.

    A SyntaxError names its own position; other exceptions are placed at the deepest
    traceback frame inside the candidate file; build failures carry compiler output.
    """
    out = parse_compiler_output(str(exc))
    if out:
        return out
    name = os.path.basename(candidate_file) if candidate_file else None
    if isinstance(exc, SyntaxError):
        return [CompilerMessage(message=f"SyntaxError: {exc.msg}", file=name, line=exc.lineno, column=exc.offset)]
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if candidate_file and frame.filename == candidate_file:
            line = frame.lineno
    first = (str(exc).strip().splitlines() or [""])[0]
    return [CompilerMessage(message=_clip(f"{type(exc).__name__}: {first}"), file=name if line else None, line=line)]


def trim_log(text: str, head: int = 40, tail: int = 80, width: int = MAX_LINE) -> str:
    """Keep the first `head` and last `tail` lines, each clipped to `width` characters."""
    lines = [_clip(ln, width) for ln in text.splitlines()]
    if len(lines) > head + tail:
        omitted = len(lines) - head - tail
        lines = lines[:head] + [f"... ({omitted} lines omitted) ..."] + lines[-tail:]
    return "\n".join(lines)


def one_line(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return _clip(f"{type(exc).__name__}: {first}" if first else type(exc).__name__, 300)


class BoundedLog:
    """Thread-safe byte collector that keeps the first `head` and last `tail` bytes.

    A candidate that floods stdout costs a bounded amount of memory here: the
    middle is dropped and only counted.
    """

    def __init__(self, head: int = 16_384, tail: int = 49_152):
        self._head_cap, self._tail_cap = head, tail
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        with getattr(self, "_lock", threading.Lock()):
            self._head = bytearray()
            self._tail = bytearray()
            self.dropped = 0

    def write(self, data: bytes) -> None:
        with self._lock:
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            if not data:
                return
            self._tail += data
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]
                self.dropped += excess

    def text(self) -> str:
        with self._lock:
            mid = f"\n... ({self.dropped} bytes of output dropped) ...\n" if self.dropped else ""
            return (bytes(self._head).decode("utf-8", "replace") + mid + bytes(self._tail).decode("utf-8", "replace"))
