"""Async broadcast of engine events to any number of consumers.

The engine publishes without ever waiting: each consumer has its own bounded
buffer. When a buffer is full, high-rate events are coalesced instead of queued
(`TokensStreamed` text is concatenated onto the consumer's pending chunk of the
same sample; `EvaluationProgress` keeps only the latest update per sample).
Step-level events are never dropped: a buffer may exceed its bound by those, and
the number of coalescing keys (step, sample) bounds that overshoot.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import replace

from htam_engine.loop.events import Event, EvaluationProgress, TokensStreamed

DEFAULT_BUFFER = 512

_COALESCABLE = (TokensStreamed, EvaluationProgress)


def _key(event: Event) -> tuple[str, int, int]:
    return (event.kind, event.step, getattr(event, "sample", 0))


def _merge(old: Event, new: Event) -> Event:
    """The one event that stands for `old` followed by `new` (same kind, step and sample)."""
    if isinstance(old, TokensStreamed) and isinstance(new, TokensStreamed):
        return replace(old, text=old.text + new.text)
    return new  # progress: the latest stage and timings are what a reader needs


class Subscription:
    """One consumer's view of the stream: `async for event in subscription`.

    Iteration ends once the bus is closed and this buffer is drained.
    """

    def __init__(self, bus: "EventBus", maxsize: int):
        self._bus = bus
        self.maxsize = max(2, maxsize)
        self._buffer: deque[Event] = deque()
        self._wakeup = asyncio.Event()
        self._closed = False
        self.coalesced = 0  # events merged into others because this consumer lagged

    def _put(self, event: Event) -> None:
        if self._closed:
            return
        if len(self._buffer) >= self.maxsize and isinstance(event, _COALESCABLE):
            key = _key(event)
            for i in range(len(self._buffer) - 1, -1, -1):
                held = self._buffer[i]
                if _key(held) == key:
                    self._buffer[i] = _merge(held, event)
                    self.coalesced += 1
                    self._wakeup.set()
                    return
        self._buffer.append(event)
        self._wakeup.set()

    def _close(self) -> None:
        self._closed = True
        self._wakeup.set()

    def pending(self) -> int:
        return len(self._buffer)

    def close(self) -> None:
        """Stop receiving (the consumer leaves); buffered events are discarded."""
        self._bus._unsubscribe(self)
        self._buffer.clear()
        self._close()

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Event:
        while not self._buffer:
            if self._closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._buffer.popleft()


class EventBus:
    def __init__(self, maxsize: int = DEFAULT_BUFFER):
        self.maxsize = maxsize
        self._subs: list[Subscription] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    def subscribe(self, maxsize: int | None = None) -> Subscription:
        """Register a consumer now (events published from here on reach it)."""
        sub = Subscription(self, maxsize or self.maxsize)
        if self._closed:
            sub._close()
        else:
            self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def bind_loop(self) -> None:
        """Remember the running loop so publishes from other threads are handed over safely."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def publish(self, event: Event) -> None:
        """Deliver to every consumer; never blocks, callable from any thread."""
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self._deliver, event)
        else:
            self._deliver(event)

    def _deliver(self, event: Event) -> None:
        for sub in list(self._subs):
            sub._put(event)

    def close(self) -> None:
        """No more events: consumers finish after draining what they hold."""
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.close)
            return
        self._closed = True
        for sub in self._subs:
            sub._close()
        self._subs.clear()

    @property
    def closed(self) -> bool:
        return self._closed
