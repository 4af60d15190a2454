"""An asyncio pool of evaluation workers.

Each slot is an `Evaluator` (one worker process, reused while healthy) driven from a
thread so the event loop never blocks. Compiles run in parallel across slots; checks
too (on a GPU a few at a time, bounded by its memory); timing is serialized per device by
lock files every worker takes (see devicelock.py), which also serializes separate htam
processes. With several visible GPUs, slot i is pinned to GPU i mod n; a GPU gets no more slots
than half its memory holds of the judges' own (slot_devices).

A problem's next candidate goes to the idle slot that evaluated that problem last, when there is
one: a judge keeps the problem's reference sandbox, whose torch.compile baseline took 10-25 s of
a KernelBench problem's first evaluation on the H200 (under the device's check lock, which
holds up every timing). Otherwise the slot idle longest, whose problem is the stalest.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.evaluator import Evaluator, Progress
from htam_engine.evaluate.result import EvalResult


def visible_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable torch CUDA: no GPUs
        return 0


def slot_devices(size: int, device: str, judges_fitting: Callable[[str], int | None] | None = None) -> list[str]:
    """The device each slot uses: an explicit `cuda:N` pins all; bare `cuda` spreads over GPUs. No more
    slots on a GPU than `judges_fitting(device)` (default: what half its memory holds of the judges'
    own, devicelock.judges_fitting; None where its memory cannot be read): a judge and its sandboxes
    hold memory between evaluations, and judges past that leave evaluations too little to run beside
    each other."""
    if not device.startswith("cuda"):
        return [device] * size
    n = visible_gpus() if device == "cuda" else 1
    devices = [f"cuda:{i % n}" for i in range(size)] if n > 1 else [device] * size
    fitting = judges_fitting or _judges_fitting
    kept: list[str] = []
    for d in devices:
        cap = fitting(d)
        if cap is None or kept.count(d) < cap:
            kept.append(d)
    return kept


def _judges_fitting(device: str) -> int | None:
    from htam_engine.evaluate.devicelock import device_memory, judges_fitting

    total = device_memory(device)
    return None if total is None else judges_fitting(total)


def judge_key(problem: Any, device: str, config: EvalConfig | None) -> str | None:
    """The key a judge keeps a loaded problem and its reference sandbox under (problems.loader's)."""
    from htam_engine.problems.loader import problem_key

    if not hasattr(problem, "source"):
        return None
    unseen = config.unseen_shape if config is not None else None
    return problem_key(problem, device, dict(unseen) if unseen is not None else None)


class WorkerPool:
    """`await pool.evaluate(problem, code, config)`; `await pool.close()` (or `async with`).

    The slot's device wins over `config.device` (the pool was built for a device).
    """

    def __init__(self, size: int = 1, device: str = "cpu"):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.device = device
        self.requested = size  # the slots asked for; `size` may be fewer (slot_devices: what a GPU's memory holds)
        devices = slot_devices(size, device)
        self._slots = [Evaluator(d, judges_on_device=devices.count(d)) for d in devices]
        self._free: list[Evaluator] = list(self._slots)  # idle slots, longest idle first
        self._freed: asyncio.Condition | None = None  # made on the running loop
        self._last_problem: dict[int, Any] = {}  # id(slot) -> the problem key it evaluated last
        self._closed = False

    @property
    def size(self) -> int:
        return len(self._slots)

    def _condition(self) -> asyncio.Condition:
        if self._freed is None:
            self._freed = asyncio.Condition()
        return self._freed

    async def _take(self, problem: Any, config: EvalConfig | None) -> Evaluator:
        """An idle slot: the one that evaluated `problem` last if idle, else the longest idle."""
        key = judge_key(problem, self.device, config)
        freed = self._condition()
        async with freed:
            await freed.wait_for(lambda: bool(self._free))
            slot = next((s for s in self._free if key is not None and self._last_problem.get(id(s)) == key),
                        self._free[0])
            self._free.remove(slot)
            self._last_problem[id(slot)] = key
            return slot

    async def _give_back(self, slot: Evaluator) -> None:
        freed = self._condition()
        async with freed:
            self._free.append(slot)
            freed.notify()

    async def evaluate(self, problem: Any, code: str, config: EvalConfig | None = None,
                       on_progress: Progress | None = None) -> EvalResult:
        if self._closed:
            raise RuntimeError("worker pool is closed")
        loop = asyncio.get_running_loop()
        slot = await self._take(problem, config)
        relay: Callable[[str, list[float]], None] | None = None
        if on_progress is not None:
            cb = on_progress

            def relay(stage: str, timings: list[float]) -> None:
                # Progress arrives on the slot's thread; hand it to the loop's thread.
                loop.call_soon_threadsafe(cb, stage, timings)

        try:
            return await asyncio.to_thread(slot.evaluate, problem, code, config, relay)
        except asyncio.CancelledError:
            # The thread is still waiting on the worker: killing the worker ends it promptly.
            slot.discard_worker()
            raise
        finally:
            # shielded: a cancelled evaluation must still hand its slot back
            await asyncio.shield(self._give_back(slot))

    def last_problems(self) -> list[Any]:
        """The problem key each slot evaluated last (None: none yet), in slot order."""
        return [self._last_problem.get(id(s)) for s in self._slots]

    async def warm(self, config: EvalConfig | None = None) -> None:
        """Start every slot's worker in the background of the loop (before the first candidate)."""
        await asyncio.gather(*(asyncio.to_thread(s.warm, config) for s in self._slots))

    async def close(self) -> None:
        self._closed = True
        await asyncio.gather(*(asyncio.to_thread(s.close) for s in self._slots))

    def kill(self) -> None:
        """Synchronous hard stop of every worker (shutdown paths without a running loop)."""
        self._closed = True
        for s in self._slots:
            s.discard_worker()

    async def __aenter__(self) -> "WorkerPool":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

