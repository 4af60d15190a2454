"""The judge's CUDA allocations over one evaluation, for finding what its peak is made of.

With HTAM_JUDGE_MEMORY_HISTORY=DIR set (settings.JUDGE_MEMORY_HISTORY_ENV), a judge records
PyTorch's allocator history (every allocation and free, with its Python stack) and writes one
snapshot per evaluation to DIR/judge-<pid>-<n>.pickle, readable with torch's memory_viz or
tests/bench/memory_peak.py.
A diagnostic: it slows the judge and the judge never reads it back.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

from htam_engine.settings import JUDGE_MEMORY_HISTORY_ENV

MAX_ENTRIES = 200_000


class MemoryHistory:
    """A judge's recorder: start() as an evaluation begins, dump() as it ends."""

    def __init__(self, device: str):
        folder = os.environ.get(JUDGE_MEMORY_HISTORY_ENV)
        self.folder = Path(folder) if folder and device.startswith("cuda") else None
        self.count = 0

    def start(self) -> None:
        if self.folder is None:
            return
        with contextlib.suppress(Exception):
            torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, stacks="python")

    def dump(self) -> None:
        """This evaluation's snapshot; the history starts afresh for the next."""
        if self.folder is None:
            return
        self.count += 1
        with contextlib.suppress(Exception):
            self.folder.mkdir(parents=True, exist_ok=True)
            torch.cuda.memory._dump_snapshot(str(self.folder / f"judge-{os.getpid()}-{self.count}.pickle"))
            torch.cuda.memory._record_memory_history(enabled=None)
