"""The one path from the engine to the screen, and the one place engine commands are sent.

`pump` is run by a single worker: it drains `engine.events()` into a buffer and posts
the buffered events as one `EngineEvents` message at most once per refresh tick, so a
burst of token or timing events costs one repaint, and a slow SSH link keeps up.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, AsyncIterator, Protocol

from textual.message import Message
from textual.message_pump import MessagePump

from htam_engine.loop.events import Event

DEFAULT_REFRESH_HZ = 10.0


class EngineLike(Protocol):
    """The engine surface the app uses (htam_engine.loop's Engine)."""

    def events(self) -> AsyncIterator[Event]: ...
    async def run(self) -> Any: ...
    def decide(self, request_id: str, decision: Any) -> Any: ...
    def pause(self) -> Any: ...
    def resume(self) -> Any: ...
    def stop(self) -> Any: ...
    def set_steps(self, n: int) -> Any: ...
    def force_direction(self, name: str) -> Any: ...
    def evaluate_now(self, code: str) -> Any: ...
    def set_policy(self, name: str) -> Any: ...


class EngineEvents(Message):
    """A batch of engine events, in order."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events


class EngineEnded(Message):
    """The event stream ended (the run finished or failed)."""

    def __init__(self, error: BaseException | None = None) -> None:
        super().__init__()
        self.error = error


async def pump(stream: AsyncIterator[Event], target: MessagePump, refresh_hz: float = DEFAULT_REFRESH_HZ) -> None:
    interval = 1.0 / max(0.5, refresh_hz)
    buffer: list[Event] = []
    arrived = asyncio.Event()

    async def read() -> None:
        async for event in stream:
            buffer.append(event)
            arrived.set()

    reader = asyncio.ensure_future(read())
    error: BaseException | None = None
    try:
        while True:
            waiter = asyncio.ensure_future(arrived.wait())
            await asyncio.wait({reader, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if buffer:
                batch = buffer[:]
                buffer.clear()
                arrived.clear()
                target.post_message(EngineEvents(batch))
            if reader.done():
                if not reader.cancelled():
                    error = reader.exception()
                break
            # the tick: events arriving now wait for the next batch
            await asyncio.sleep(interval)
    finally:
        reader.cancel()
        target.post_message(EngineEnded(error))


async def send(engine: Any, command: str, *args: Any) -> Any:
    """Call an engine command, awaiting it if it is a coroutine."""
    fn = getattr(engine, command, None)
    if fn is None:
        raise RuntimeError(f"the engine has no '{command}' command")
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def describe(engine: Any) -> dict[str, Any]:
    """Static facts about the run for the status line (problem, backend, device, policy, steps)."""
    config = getattr(engine, "config", None)
    problem = getattr(engine, "problem", None)
    policy = getattr(engine, "policy", None)
    out: dict[str, Any] = {
        "problem": getattr(problem, "id", "") or "",
        "backend": str(getattr(config, "backend", "") or ""),
        "device": str(getattr(config, "device", "") or ""),
        "policy": policy if isinstance(policy, str) else str(getattr(config, "policy", "") or ""),
        "steps": int(getattr(engine, "steps_planned", 0) or getattr(config, "steps", 0) or 0),
    }
    return out


def session_facts(engine: Any) -> dict[str, Any]:
    """What the engine's session knows better than the event stream: tokens and cost so far,
    and the best candidate's code (for the diff view and re-evaluation)."""
    session = getattr(engine, "session", None)
    out: dict[str, Any] = {}
    usage = getattr(session, "usage", None)
    if usage is not None:
        out["tokens"] = usage.prompt_tokens + usage.completion_tokens
        out["cost_usd"] = usage.cost_usd
    best = getattr(session, "best_code", None)
    if best is not None:
        out["best_code"] = best
    return out
