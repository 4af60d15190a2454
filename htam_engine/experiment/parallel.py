"""Proposals written in worker processes, so a thousand sessions in one event loop are not bound
to one core.

The offline proposer traces the problem and generates a module on every request (tens of ms of
Python); an experiment asks it thousands of times, while the event loop also drives every
session and the evaluation pool. `ProcessProposer` sends each request to a pool of processes,
each holding its own proposer built by `factory` (a picklable callable: a proposer class will
do). Requests and proposals are plain dataclasses and travel by pickle. Token streaming is not
relayed (nobody watches an experiment's sessions); `reflect` runs in this process.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

from htam_engine.propose.base import KnowsMoves, MoveQuery, Moves, Proposal, ProposalRequest

_PROPOSER: Any = None  # the proposer of this worker process


def _start(factory: Callable[[], Any]) -> None:
    global _PROPOSER
    _PROPOSER = factory()


def _propose(request: ProposalRequest) -> Proposal:
    return asyncio.run(_PROPOSER.propose(request))


def _movable(query: MoveQuery) -> Moves:
    return asyncio.run(_PROPOSER.movable(query))


class ProcessProposer:
    """The Proposer protocol (propose/base.py) over `workers` processes."""

    def __init__(self, factory: Callable[[], Any], workers: int):
        self.local = factory()
        self.name = self.local.name
        if isinstance(self.local, KnowsMoves):  # only then: the engine hands a KnowsMoves proposer every strategy
            self.movable = self._movable_in_pool
        # spawn, not fork: the caller's threads (worker-pool relays) must not be copied mid-flight
        self._pool = ProcessPoolExecutor(max(1, workers), mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(factory,))

    async def propose(self, request: ProposalRequest, on_token: Any = None) -> Proposal:
        return await asyncio.get_running_loop().run_in_executor(self._pool, _propose, request)

    async def _movable_in_pool(self, query: MoveQuery) -> Moves:
        return await asyncio.get_running_loop().run_in_executor(self._pool, _movable, query)

    async def reflect(self, request: ProposalRequest, code: str, result: Any) -> Any:
        return await self.local.reflect(request, code, result)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
