"""Who may use a device at once: timing alone, checks beside others as far as memory allows.

Timing must have the device to itself, or other work skews it. Checks only need memory,
so on a GPU several workers may hold state at once, as long as their input sets, outputs
and models together fit. Across processes this is:

- units: the device's usable memory is cut into `check_slots(device)` units (one per
  UNIT_GIB); a worker holds as many as its evaluation needs (`holding_state(need_bytes)`,
  from its check to the end of its timing), each an exclusive unit lock ("slot" in the
  lock's file name). Units are taken only under an admission lock, held while collecting
  them (every free one at once, then polling for the rest): nobody else takes a unit
  meanwhile, so a big evaluation waiting for units is not starved by a stream of small ones,
  and it waits only for the holders in front of it (they let go of units without admission).
  Workers blocked on the admission lock together get it in the kernel's order, not their
  arrival's; once a worker has it, nobody passes it. A process never takes units while it
  holds some (`alone()` runs after an evaluation let go of its own), so admission cannot
  deadlock. With its units, an evaluation also waits (still under admission) until the device
  has what it needs free, every process's use counted, unless nobody else holds units: the units
  leave the judges' contexts and what their sandboxes keep to an allowance (`_fits`);
- the device lock, taken shared while checking and exclusive while timing. On a GPU the
  exclusive hold is one timed run (`timed_run`: a candidate's run and its baselines' runs on
  the same sets), not the whole timed stage: the judge's work between runs (drawing the next
  sets, the reference's outputs, comparing) holds it shared, beside other judges' checks. A
  checker lets a waiting timer in between two of its calls (`let_timers_in`). So a timer
  waits for one call of another judge's checks, not for the rest of its check stage, and
  checkers wait for one run, not for a whole timed stage (with a pool of judges the device's
  queue was a timed stage, then the longest check in flight, in turn);
- a gate that a timer holds while it waits for and holds the exclusive lock, and that a
  checker passes through before taking the shared one, so a waiting timer is not starved
  by a stream of checkers.

Locks are taken in one order (admission, units, gate, device lock) and none is waited on
while holding a later one. On the CPU there are no units and checks take no lock (a
worker's memory is capped by its own limit); timing is exclusive for the whole timed stage
(`timed_stage`), whose work between runs shares the cores the timed calls use. "wait_lock" is
announced only where a lock must be waited for. Every lock is an fcntl lock in the cache dir,
released by the kernel when its holder dies.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from typing import Any, Callable, Iterator

from htam_engine import settings
from htam_engine.evaluate.cache import release_file_lock, take_file_lock, try_file_lock
from htam_engine.problems.loader import layouts_bytes

SLOTS_ENV = settings.BY_KEY["gpu_check_slots"].env
GIB = 1 << 30

# One unit of device memory: small enough that a small problem's evaluation (well under a GiB
# of inputs) does not keep much of an H200 from others, large enough that a device has a few
# dozen units at most (each a lock file that admission tries).
UNIT_GIB = 4
# At most this many units (a bigger device's units are bigger): admission tries each one's lock.
MAX_UNITS = 32
# Device memory that no evaluation's estimate counts: what every judge on the device holds whether or
# not it holds units. A judge has a zygote (never initialises CUDA), a spare sandbox (none until its
# first request), a candidate sandbox (its context and L2 flusher made at build, before it takes
# units) and a reference sandbox (kept between evaluations with its baselines' parameters), plus its
# own context. Measured on an H100 (tests/bench/data/throughput_h100_triton_d1465e1.txt, 16 judges
# idle between evaluations): a judge 1.2-1.3 GiB, a reference sandbox 1.4 GiB, a candidate sandbox
# 1.1-1.6 GiB before its evaluation takes units: ~4 GiB a judge. A pool tells its judges how many of
# them share the device (JUDGES_ENV, set by evaluate.pool); a judge started on its own assumes
# JUDGES_PER_DEVICE, the pool an H200 runs. The allowance is at most half the device, whose other
# half stays for evaluations, and a pool runs no more judges on a device than that half holds
# (judges_fitting). (At 2 GiB a judge, 16 judges on the H100 held 50-64 GiB of its 79 where 32 were
# allowed: admission lent out memory they held, and 6 of 16 evaluations ran out beside others and
# were run again alone, which held up every other.)
CONTEXT_GIB_PER_JUDGE = 4
JUDGES_PER_DEVICE = 16
JUDGES_ENV = "HTAM_JUDGES_ON_DEVICE"


def judges_on_device() -> int:
    """How many judges share this judge's device: what its pool said (JUDGES_ENV), else JUDGES_PER_DEVICE."""
    try:
        return max(1, int(os.environ.get(JUDGES_ENV, "")))
    except ValueError:
        return JUDGES_PER_DEVICE


# An evaluation's peak on the device as a multiple of one input set plus its output, every
# process's memory counted: measured on the H200 at KernelBench's official sizes (gpu_memory.py)
# 4.3x and 5.6x for 45_Average_Pooling_2D and 46_Average_Pooling_3D, 3.1x for 4_Matrix_vector
# (which ended before its timed rounds), with the judge's own allocated peak 3.0-4.2x: a large
# set staged before the judge's work on it, its unseen shape kept within 10 % of it (the
# issue's bound, 6x, is what admission counts). The output is not known before the problem
# runs, so it is taken as large as the input set: right for elementwise problems, generous for
# reductions and pooling (which then run nearly alone). An evaluation that still runs out
# beside others is run again alone (Judge.evaluate).
NEED_FACTOR = 6
# Beside the inputs: the models' parameters (the judge's float32 and float64 copies, the
# candidate's, the baselines'), cuBLAS workspaces and the allocators' rounding.
NEED_ALLOWANCE_GIB = 2
# An evaluation whose inputs cannot be drawn on the meta device (get_inputs needs real values)
# may be anything from tiny to the whole device. Half the units: at most two such at once, or
# one beside small ones, never queued behind every other evaluation as taking them all would be;
# where that still runs out, the evaluation runs again alone (Judge.evaluate).
UNKNOWN_SHARE = 0.5


def judges_fitting(total: int) -> int:
    """How many judges a device of `total` bytes holds: their own memory (CONTEXT_GIB_PER_JUDGE
    each) in at most half of it, the other half for evaluations."""
    return max(1, total // 2 // (CONTEXT_GIB_PER_JUDGE * GIB))


def usable_memory(total: int, judges: int | None = None) -> int:
    """What evaluations may share of a device with `total` bytes: the rest is the contexts of the
    `judges` on it (judges_on_device() where not given)."""
    judges = judges_on_device() if judges is None else judges
    return total - min(CONTEXT_GIB_PER_JUDGE * judges * GIB, total // 2)


def device_memory(device: str) -> int | None:
    """The GPU's total memory in bytes; None on the CPU or where it cannot be read."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch

        return int(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    except Exception:  # noqa: BLE001 - no properties
        return None


def check_slots(device: str, total_memory: int | None = None) -> int:
    """How many units of memory `device` has for evaluations; 0 means no limit (the CPU).

    The `gpu_check_slots` setting (`HTAM_GPU_CHECK_SLOTS`) overrides: N cuts the usable memory
    into N units, so at most N evaluations hold state at once (1: one at a time). Otherwise one
    unit per UNIT_GIB of usable memory, at least 1 and at most MAX_UNITS; where the memory cannot
    be read, 1.
    `total_memory` stands for the device's (a GPU's policy on any device: for tests)."""
    if total_memory is None and not device.startswith("cuda"):
        return 0
    chosen = settings.gpu_check_slots()
    if chosen is not None:
        return chosen
    total = total_memory if total_memory is not None else device_memory(device)
    if total is None:
        return 1
    return max(1, min(MAX_UNITS, usable_memory(total) // (UNIT_GIB * GIB)))


def evaluation_need(input_layouts: Any, unseen_input_layouts: Any, has_unseen: bool) -> int | None:
    """The device memory an evaluation needs at its peak, from its input sets' layouts, before it
    allocates anything: NEED_FACTOR x (the larger set's bytes + as many for its output), the sandboxes'
    warm-up copies of a set up to timing.WARM_COPY_MAX_BYTES, and NEED_ALLOWANCE_GIB. None where a
    set it draws has no layout (get_inputs could not run on the meta device). `has_unseen`: whether
    it also draws the unseen-shape set (else `unseen_input_layouts` is None for want of one)."""
    if input_layouts is None or (has_unseen and unseen_input_layouts is None):
        return None
    from htam_engine.evaluate.timing import WARM_COPY_MAX_BYTES

    largest = max(layouts_bytes(input_layouts), layouts_bytes(unseen_input_layouts or ()))
    # the candidate's and the reference's sandbox each keep a copy of a set this small to warm up on
    warm_copies = 2 * largest if largest <= WARM_COPY_MAX_BYTES else 0
    return NEED_FACTOR * 2 * largest + warm_copies + NEED_ALLOWANCE_GIB * GIB


def device_free_memory(device: str) -> int | None:
    """The bytes free on `device` now, every process's use counted (the driver's figure); None on the
    CPU, in a process without a CUDA context (asking would make one), or where it cannot be read."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch

        if not torch.cuda.is_initialized():
            return None
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    except Exception:  # noqa: BLE001 - no figure: admission by units alone
        return None


def settle(device: str) -> None:
    """Until this process's queued work on `device` has ended (a GPU runs it after the call that
    queued it returned): before it lets others have the device."""
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_initialized():  # else it has queued nothing
            torch.cuda.synchronize(torch.device(device))


class DeviceLock:
    """The three phases of an evaluation after its compile, for one device.

    `announce` is called with "wait_lock" before any wait (the engine does not count the
    wait against the candidate's timeout), `resume` after a wait in the middle of a stage (the
    evaluation's stage goes on). `total_memory` / `units`: the device's memory and
    how many units it is cut into, in place of what `device` reports (so that the GPU's policy
    can run on the CPU, for tests); `units` wins over the `gpu_check_slots` setting."""

    def __init__(self, device: str, name: str, announce: Callable[[str], None] = lambda stage: None,
                 total_memory: int | None = None, units: int | None = None, poll_s: float = 0.05,
                 resume: Callable[[], None] = lambda: None, free_memory: Callable[[], int | None] | None = None):
        self.device = device
        # what the device has free now (device_free_memory; a stand-in for tests): admission's check
        # beside the units, which count only what evaluations' sets need
        self.free_memory = free_memory if free_memory is not None else (lambda: device_free_memory(device))
        self.name = name
        self.resume = resume
        if units is not None:
            self.slots = units
        elif total_memory is not None:
            self.slots = check_slots(device, total_memory)
        else:
            self.slots = check_slots(device)
        total = total_memory if total_memory is not None else device_memory(device)
        # bytes a unit stands for; None where the memory is unknown (each evaluation then takes one)
        self.unit_bytes = usable_memory(total) / self.slots if self.slots and total else None
        self.announce = announce
        # Around every wait of this worker's for a lock or units (the judge stops its candidate's
        # processes meanwhile: waiting for the timing lock, they spun under another judge's timed
        # runs, red-team pass 29).
        self.waiting: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
        self.poll_s = poll_s
        self.held_alone = False  # inside alone(): every phase already has the device to itself
        self.last_units = 0  # how many units the last holding_state took (the judge resets it)
        # Since the judge last reset them (per evaluation): seconds spent waiting for a lock or
        # units, and holding the device alone. On a GPU the pool's throughput is bounded by the
        # second summed over every evaluation; the first says what the queue cost this one.
        self.waited_s = 0.0
        self.alone_s = 0.0
        self._local = threading.local()  # the units this thread holds (threads stand in for workers in tests)

    def units_for(self, need_bytes: int | None) -> int:
        """The units an evaluation needing `need_bytes` takes: ceil(need / unit), at least 1 and
        at most all (one bigger than the device runs alone rather than being refused); an unknown
        need (None) takes UNKNOWN_SHARE of them."""
        if not self.slots:
            return 0
        if need_bytes is None:
            return max(1, math.ceil(self.slots * UNKNOWN_SHARE))
        if self.unit_bytes is None:
            return 1
        return max(1, min(self.slots, math.ceil(need_bytes / self.unit_bytes)))

    def shared_with_others(self) -> bool:
        """Whether others may have had the device's memory beside the evaluation since `last_units`
        was reset to 0 (so running out may be their doing): it left them units, or took none."""
        return self.slots > 1 and self.last_units < self.slots

    def _fits(self, need_bytes: int | None, names: list[str], held: dict[str, list[int]]) -> bool:
        """Whether an evaluation needing `need_bytes` may start with the units it holds: the device
        has that much free (every process's use counted, the judges' contexts and what their
        sandboxes keep included, which the units leave to CONTEXT_GIB_PER_JUDGE), or nobody else
        holds units (what fills the device then is no evaluation's, and waiting would not free it).
        Unknown need or free memory: the units decide alone."""
        if need_bytes is None:
            return True
        free = self.free_memory()
        if free is None or free >= need_bytes:
            return True
        for n in names:
            if n not in held:
                fds = try_file_lock(n)
                if fds is None:
                    return False  # another evaluation holds state: its end frees memory
                release_file_lock(fds)
        return True

    @contextlib.contextmanager
    def _units(self, count: int, need_bytes: int | None = None) -> Iterator[None]:
        """`count` units, collected under the admission lock: every free one at once, then the rest
        as their holders let go of them (polled); then, where the device has less than `need_bytes`
        free beside others' evaluations, until it has (_fits). Out of memory beside others, an
        evaluation is run again with the device alone (Judge.evaluate), holding up every other; a
        wait here holds up only those behind it at admission, and only while memory is short."""
        if getattr(self._local, "units", 0):
            raise RuntimeError("units are taken only by a worker that holds none (admission could deadlock)")
        names = [f"{self.name}-slot{i}" for i in range(self.slots)]
        held: dict[str, list[int]] = {}
        waiting_since = 0.0
        try:
            started = time.perf_counter()
            with contextlib.ExitStack() as waiting:  # self.waiting(), from the first wait on
                admit = f"{self.name}-admit"
                admitted = try_file_lock(admit)
                in_wait = admitted is None
                if in_wait:
                    waiting.enter_context(self.waiting())
                    admitted = take_file_lock(admit)
                try:
                    self.waited_s += time.perf_counter() - started
                    while True:
                        for n in names:
                            if n not in held and len(held) < count:
                                fds = try_file_lock(n)
                                if fds is not None:
                                    held[n] = fds
                        if len(held) >= count and self._fits(need_bytes, names, held):
                            break
                        if not waiting_since:
                            waiting_since = time.perf_counter()
                        if not in_wait:
                            in_wait = True
                            waiting.enter_context(self.waiting())
                        time.sleep(self.poll_s)
                finally:
                    release_file_lock(admitted)
            if waiting_since:
                self.waited_s += time.perf_counter() - waiting_since
            self._local.units = self.last_units = count
            yield
        finally:
            self._local.units = 0
            for fds in held.values():
                release_file_lock(fds)

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """A whole evaluation with the device to itself: every unit (so no other worker keeps
        state on the device), then the exclusive lock. For an evaluation that ran out of memory
        beside others. The units are taken before the gate, so a worker holding some can still
        pass the gate to finish its timing and free them."""
        if self.held_alone:
            yield
            return
        self.announce("wait_lock")
        with contextlib.ExitStack() as stack:
            if self.slots:
                stack.enter_context(self._units(self.slots))
            stack.enter_context(self.timing())
            self.held_alone = True
            try:
                yield
            finally:
                self.held_alone = False

    @contextlib.contextmanager
    def holding_state(self, need_bytes: int | None = None) -> Iterator[None]:
        """Around everything that keeps models and inputs on the device: the units `need_bytes`
        takes (`units_for`; None: not known)."""
        if not self.slots or self.held_alone:
            yield
            return
        self.announce("wait_lock")
        with self._units(self.units_for(need_bytes), need_bytes):
            yield

    @contextlib.contextmanager
    def checking(self) -> Iterator[None]:
        """Checks, and the judge's own device work between timed runs: alongside other checkers,
        never during a timing. A block inside another's hold (of this thread) holds nothing more."""
        if not self.slots or self.held_alone or getattr(self._local, "shared", None) is not None:
            yield
            return
        self._local.shared = self._take_shared()
        try:
            yield
        finally:
            held, self._local.shared = self._local.shared, None
            if held is not None:
                settle(self.device)
                release_file_lock(held)

    def let_timers_in(self) -> None:
        """Between two calls of a check holding the device shared: a timer waiting at the gate
        has its run now, not after the rest of this evaluation's checks (seconds: a Triton
        candidate's first calls compile its kernels, and every set is compared in float64).
        The judge's own queued device work ends first, so none of it runs beside the timer's run."""
        held = getattr(self._local, "shared", None)
        if held is None:
            return
        gate = try_file_lock(f"{self.name}-gate")
        if gate is not None:  # nobody is waiting to time
            release_file_lock(gate)
            return
        settle(self.device)
        self._local.shared = None
        release_file_lock(held)
        self._local.shared = self._take_shared()

    def _take(self, name: str, shared: bool, waited: bool) -> tuple[list[int], bool]:
        """Lock `name`, announcing "wait_lock" before the first wait of a sequence (`waited`: one
        came already); the lock and whether the sequence has waited now."""
        held = try_file_lock(name, shared)
        if held is not None:
            return held, waited
        if not waited:
            self.announce("wait_lock")
        started = time.perf_counter()
        with self.waiting():
            held = take_file_lock(name, shared)
        self.waited_s += time.perf_counter() - started
        return held, True

    def _take_shared(self) -> list[int]:
        """The device lock shared, once past the gate (a timer holding it goes first)."""
        gate, waited = self._take(f"{self.name}-gate", False, False)
        release_file_lock(gate)
        held, waited = self._take(self.name, True, waited)
        if waited:
            self.resume()
        return held

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        """The device to itself (a timed run, or a check run again alone)."""
        if self.held_alone:
            yield
            return
        if getattr(self._local, "shared", None) is not None:
            raise RuntimeError("the device is taken alone only by a worker that does not hold it shared "
                               "(its own shared hold would keep it waiting for ever)")
        names = ([f"{self.name}-gate"] if self.slots else []) + [self.name]
        held: list[list[int]] = []
        waited = False
        try:
            for n in names:  # the gate first: checkers arriving meanwhile wait behind this timer
                fds, waited = self._take(n, False, waited)
                held.append(fds)
            if waited:
                self.resume()
            since = time.perf_counter()
            try:
                yield
            finally:
                self.alone_s += time.perf_counter() - since
        finally:
            for fds in reversed(held):
                release_file_lock(fds)

    @contextlib.contextmanager
    def timed_stage(self) -> Iterator[None]:
        """Around an evaluation's timed rounds as a whole. On the CPU the device alone for all of
        it: the judge's work between runs (drawing the next sets, the reference's outputs,
        comparing) runs on the cores the timed calls use. On a GPU nothing: each run takes the
        device alone (`timed_run`) and the work between runs holds it shared (`checking`)."""
        if self.slots:
            yield
            return
        with self.timing():
            yield

    @contextlib.contextmanager
    def runs_alone(self, short: bool) -> Iterator[None]:
        """Around a stretch of timed runs and the judge's work between them: where the stretch is
        `short` (rounds.STRETCH_ALONE_S), the device alone throughout, taken once. Each take
        waits for every checker's call in flight (a Triton candidate's first call compiles its
        kernels: seconds), and behind the gate every other judge waits too: taken per run, a pool
        of 16 judges on the H200 spent 12 % of its wall with the device held alone and a median
        27 s per evaluation waiting. A long stretch still takes it per run (`timed_run`), the
        judge's work between runs shared."""
        if not short or not self.slots or self.held_alone:
            yield
            return
        with self.timing():
            self.held_alone = True
            try:
                yield
            finally:
                self.held_alone = False
                settle(self.device)  # the judge's own queued work ends before others have the device

    @contextlib.contextmanager
    def timed_run(self) -> Iterator[None]:
        """One timed run (a candidate's calls and its baselines' on the same sets): the device
        alone on a GPU; on the CPU `timed_stage` already holds it."""
        if not self.slots:
            yield
            return
        with self.timing():
            yield
