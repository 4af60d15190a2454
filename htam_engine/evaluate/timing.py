"""One trial, inside a sandbox: the same protocol for every call, checked or timed.

On CUDA it is KernelBench's `time_execution_with_cuda_event`: synchronize the device, flush
L2 by filling a 256 MB buffer (queued, not waited for: the host launches the forward while the
GPU still flushes, so launch latency is not counted, as in KernelBench; filled FLUSH_WRITES
times, where KernelBench fills it once, for a sandbox's colder launch path), record the start
event, forward, record the end event, synchronize the device. One event more than KernelBench's,
before the flush, times the flush itself: a forward that starts work on a stream of its own that
does not wait for the current one runs it beside the flush, before the start event, where the
events do not see it, and the flush takes longer than in the reference sandbox's trials
(clock.flush_check). On the CPU: perf_counter around
the forward, with glibc's heap perturbation on (freed memory never holds an earlier result).
Before the trial, freed memory of the sizes in play is poisoned with the call's marker.

Nothing here is instrumented per kernel launch. The clock, events and synchronize are bound
when this module is imported, before candidate code exists; a candidate can still rewrite
them in its own process, which is why the judge checks every reported time against its own
wall clock (clock.py).
"""

from __future__ import annotations

from time import perf_counter_ns as _perf_counter_ns
from typing import Any, Callable, Iterable, NamedTuple

import torch

from htam_engine.evaluate.checks.memory import perturbed_heap, poison

_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_event_synchronize = torch.cuda.Event.synchronize
_no_grad = torch.no_grad

# A sandbox keeps a private copy of a call's inputs for the next warm-up (wire.Arm) up to this
# many bytes. A forward called right after its process waited is several times slower on the host
# than back to back (tests/bench/cpu_cold_call.py: relu on 64x1024, 0.2 ms after a 10 ms wait, 0.009
# ms back to back), and KernelBench times back to back. Past a GiB the copy would count against the
# judge's memory bound: a candidate then warms up on the shared buffers themselves, the reference
# sandbox not at all (sandbox.Sandbox._warm_inputs says why).
WARM_COPY_MAX_BYTES = 1 << 30

# On CUDA a sandbox polls its socket this long after answering an Arm (its warm-up done) before it
# sleeps in the read: the judge's Go comes once it has written the inputs, well within this for the
# inputs of a short kernel, and a core that slept in the read runs the forward's launch code
# several times slower (tests/bench/cpu_cold_call.py, "polled recv"), time the device waits inside
# the events, which KernelBench's back-to-back calls do not see. Every run of calls follows its
# warm-up alike, checked or timed, so a call cannot tell which it is by it. After other replies the sandbox
# sleeps at once: the judge waits for the reference sandbox to be asleep before a candidate's tree
# runs again (rounds.reference_runs), and a poll there would add its length to every round.
POLL_BEFORE_SLEEP_NS = 5_000_000
# ... plus the time the judge takes to write the run's inputs after that answer, at the least
# bandwidth a GPU's device-to-device copy reaches (bytes a nanosecond: ~1.5-2 on an H100 or H200):
# 1/94_MSELoss's 8 GiB of inputs take longer to write than the 5 ms alone, so its forward would wake cold.
# A run's poll depends on its inputs' size only, the same for checked and timed calls.
POLL_WRITE_BYTES_PER_NS = 1.0
# ... and never longer than this (a core spinning).
POLL_MAX_NS = 100_000_000

# KernelBench's L2 flush: 32 * 1024 * 1024 int64 = 256 MB, larger than any current GPU's L2.
L2_FLUSH_ELEMENTS = 32 * 1024 * 1024
# ... written this many times ahead of each trial's start event. KernelBench writes it once, which
# the device takes about 0.09 ms for on an H100 (0.055 on an H200) while the host launches the
# forward; a launch path longer than that is timed as an idle device. In KernelBench's loop of
# back-to-back calls the host's code is hot; in a sandbox the forward follows the harness's own work:
# on the H100 an offline Triton kernel's forward took 0.109 ms on the host there against 0.065-0.085
# in one process (tests/bench/gpu_probe_timing.py, 1/12), and the sandbox reported 0.079 ms where
# KernelBench's loop timed 0.050. Four writes give the launch 0.2-0.35 ms, so the events time the
# forward's device work as KernelBench's hot loop does. It stays bandwidth-bound work on the current
# stream: a kernel started beside it on a stream of its own slows it as it slowed one write
# (clock.flush_check).
FLUSH_WRITES = 4


def poll_before_sleep_ns(input_bytes: int) -> int:
    """How long a sandbox polls for the Go after answering an Arm whose calls read `input_bytes`."""
    return min(POLL_MAX_NS, POLL_BEFORE_SLEEP_NS + int(input_bytes / POLL_WRITE_BYTES_PER_NS))


def is_cuda(device: str) -> bool:
    return device.startswith("cuda")


class L2Flusher:
    """KernelBench's clear_l2_cache, with the buffer allocated once per sandbox and written `writes`
    times (FLUSH_WRITES says why; 1 is KernelBench's own)."""

    def __init__(self, device: str, writes: int = FLUSH_WRITES):
        self._buf = torch.empty(L2_FLUSH_ELEMENTS, dtype=torch.int64, device=device)
        self.writes = writes

    def __call__(self) -> None:
        for _ in range(self.writes):
            self._buf.fill_(42)


class TrialTimes(NamedTuple):
    """One trial as run_trial measured it."""

    out: Any
    ms: float  # the forward: start to end event (CUDA), perf_counter (CPU)
    tail_ms: float  # CUDA: device work past the end event, by the host clock; 0 on the CPU
    flush_ms: float  # CUDA: the L2 flush, from the event before it to the start event; 0 on the CPU


def run_trial(forward: Callable[..., Any], args: list[Any], device: str, marker: float,
              poison_sizes: Iterable[int], flusher: L2Flusher | None,
              mark: Callable[[str], None] | None = None) -> TrialTimes:
    """One forward under the protocol above.

    The tail (CUDA only; 0 on the CPU): how long the device still worked once the end event on
    the current stream had passed, by the host clock between that event and the device-wide
    synchronize. Work forward queued on a stream the current one never waits for runs there,
    outside the events; an honest forward's tail is the synchronize's own latency, the same in
    the reference sandbox's calls, which the judge compares it with (clock.tail_check). mark(phase),
    where given (the sandbox's trace), notes when the poison's blocks were queued, when the poison
    and the synchronize after it ended and when the flush was queued."""
    poison(device, poison_sizes, marker, mark=mark)
    if mark is not None:
        mark("poison")
    with _no_grad():
        if flusher is not None:
            _synchronize(device)
            if mark is not None:
                mark("synchronize")
            before, start, end = (_Event(enable_timing=True) for _ in range(3))
            before.record()
            flusher()
            start.record()
            if mark is not None:
                mark("flush_queued")
            out = forward(*args)
            end.record()
            _event_synchronize(end)
            t_end = _perf_counter_ns()
            _synchronize(device)
            tail_ms = (_perf_counter_ns() - t_end) / 1e6
            return TrialTimes(out, float(start.elapsed_time(end)), tail_ms, float(before.elapsed_time(start)))
        with perturbed_heap(marker):
            t0 = _perf_counter_ns()
            out = forward(*args)
            t1 = _perf_counter_ns()
        return TrialTimes(out, (t1 - t0) / 1e6, 0.0, 0.0)
