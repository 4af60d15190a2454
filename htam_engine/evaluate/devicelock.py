"""Who may use a device at once: timing alone, checks a few at a time.

Timing must have the device to itself, or other work skews it. Checks only need memory,
so on a GPU a few workers may check at once, but not so many that their input sets,
outputs and models run the GPU out of memory. Across processes this is:

- slots: at most `check_slots(device)` workers hold live GPU state (from their check to
  the end of their timing); each holds one of that many exclusive slot locks;
- the device lock, taken shared while checking and exclusive while timing;
- a gate that a timer holds while it waits for and holds the exclusive lock, and that a
  checker passes through before taking the shared one, so a waiting timer is not starved
  by a stream of checkers.

On the CPU there are no slots and checks take no lock (a worker's memory is capped by its
own limit); timing is exclusive as on a GPU. Every lock is an fcntl lock in the cache dir,
released by the kernel when its holder dies.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from htam_engine import settings
from htam_engine.evaluate.cache import any_file_lock, file_lock

SLOTS_ENV = settings.BY_KEY["gpu_check_slots"].env

# GPU memory set aside per concurrent check: a check at GPU sizes holds a few input sets,
# the outputs and a float64 reference (a few GB for the built-in suite's largest problems).
GIB_PER_SLOT = 32
MAX_SLOTS = 4


def check_slots(device: str) -> int:
    """How many workers may hold live state on `device` at once; 0 means no limit (the CPU).

    The `gpu_check_slots` setting (`HTAM_GPU_CHECK_SLOTS`) overrides; otherwise one slot per
    GIB_PER_SLOT of GPU memory, between 1 (the old one-at-a-time behaviour) and MAX_SLOTS."""
    if not device.startswith("cuda"):
        return 0
    chosen = settings.gpu_check_slots()
    if chosen is not None:
        return chosen
    try:
        import torch

        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
    except Exception:  # noqa: BLE001 - no properties: the safe choice
        return 1
    return max(1, min(MAX_SLOTS, total // (GIB_PER_SLOT << 30)))


class DeviceLock:
    """The three phases of an evaluation after its compile, for one device.

    `announce` is called with "wait_lock" before any wait (the engine does not count the
    wait against the candidate's timeout)."""

    def __init__(self, device: str, name: str, announce: Callable[[str], None] = lambda stage: None):
        self.name = name
        self.slots = check_slots(device)
        self.announce = announce
        self.held_alone = False  # inside alone(): every phase already has the device to itself

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """A whole evaluation with the device to itself: every slot (so no other worker keeps
        state on the device), then the exclusive lock. For an evaluation that ran out of memory
        beside others. The slots are taken before the gate, so a worker holding one can still
        pass the gate to finish its timing and free it."""
        if self.held_alone:
            yield
            return
        self.announce("wait_lock")
        with contextlib.ExitStack() as stack:
            for i in range(self.slots):
                stack.enter_context(file_lock(f"{self.name}-slot{i}"))
            stack.enter_context(self.timing())
            self.held_alone = True
            try:
                yield
            finally:
                self.held_alone = False

    @contextlib.contextmanager
    def holding_state(self) -> Iterator[None]:
        """Around everything that keeps models and inputs on the device: one slot."""
        if not self.slots or self.held_alone:
            yield
            return
        self.announce("wait_lock")
        with any_file_lock([f"{self.name}-slot{i}" for i in range(self.slots)]):
            yield

    @contextlib.contextmanager
    def checking(self) -> Iterator[None]:
        """Checks: alongside other checkers, never during a timing."""
        if not self.slots or self.held_alone:
            yield
            return
        with file_lock(f"{self.name}-gate"):
            pass  # a timer holding the gate goes first
        with file_lock(self.name, shared=True):
            yield

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        """Baselines and timing: the device to itself."""
        if self.held_alone:
            yield
            return
        self.announce("wait_lock")
        with file_lock(f"{self.name}-gate") if self.slots else contextlib.nullcontext():
            with file_lock(self.name):
                yield
