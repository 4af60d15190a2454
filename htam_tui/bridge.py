"""The one path from the engine to the screen.

`pump` is run by a single worker: it drains `engine.events()` into a buffer and posts
the buffered events as one `EngineEvents` message at most once per refresh tick, so a
burst of token or timing events costs one repaint, and a slow SSH link keeps up.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Protocol

from textual.message import Message
from textual.message_pump import MessagePump

from htam_engine.loop.events import Event

DEFAULT_REFRESH_HZ = 10.0


class EngineLike(Protocol):
    """The engine surface the app uses (htam_engine.loop's Engine): its events, and typed
    commands. Decisions are made on the requests the events carry."""

    def events(self) -> AsyncIterator[Event]: ...
    async def run(self) -> Any: ...
    def approve_all(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def stop(self) -> None: ...
    def set_budget(self, steps: int) -> None: ...
    def choose_direction(self, name: str) -> None: ...
    async def reevaluate(self) -> Any: ...


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
