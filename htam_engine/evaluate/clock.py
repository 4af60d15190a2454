"""The judge owns the clock: it accepts a sandbox's reported trial times only if its own agrees.

Per trial the judge measures its wall time from sending the call to reading the reply; the
overhead is that wall time minus the time the sandbox reported. The clean reference sandbox,
running the same protocol on the same buffers, gives the honest overhead. A candidate whose
median overhead exceeds the reference's by more than the margin did work the reported time
does not cover (a forged timer, work on a side stream the events did not wait for, work moved
after the end event or into a thread), and is rejected naming both figures.

Margin = MARGIN_SPREADS x the interquartile range of the reference's overheads (its own noise)
+ a fraction of the candidate's median trial + an absolute floor, per device. On a GPU box the
channel's jitter is tens of microseconds, but two sandboxes' median overheads in honest
evaluations on the H200 differed by up to 0.3-0.5 ms either way (each process's host code runs
cold after the pause between calls, by a different amount), more than 3 IQR of a few trials
covers: the floor is 0.5 ms. Work hidden within it still costs the candidate through the
judge's figure below. On a shared,
busy CPU host the scheduler makes a process that just burned CPU wait longer to run again, so a
slow CPU candidate's replies come back later than the reference's for no fault of its own:
there the fraction is half the trial and the floor 10 ms (CPU timings are advisory anyway).

Physics floor: no trial can be faster than writing its outputs once at the device's copy
bandwidth (measured by the judge): a faster one is a forged time.

The judge's figure: a reported time can only make the candidate look slower, never faster. The
candidate's runtime is the larger of its median reported time and what the judge's own clock
leaves of its median trial once the reference's honest overhead (and that overhead's noise) is
taken off. Work hidden inside the margin (a timer slowed within it, work moved before or after
the timed window into a call the harness makes) then costs the candidate what it cost the
judge's clock, whether or not any finding named it: the sandbox's guards that name such tricks
run in the candidate's process and can be silenced there.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from htam_engine.evaluate.proctree import TICK_MS
from htam_engine.evaluate.result import ClockCheck, Spread
from htam_engine.evaluate.timing import FLUSH_WRITES

MARGIN_SPREADS = 3.0
MARGIN_FRACTION = {"cpu": 0.5, "cuda": 0.05}
MARGIN_FLOOR_MS = {"cpu": 10.0, "cuda": 0.5}
# Reported times may beat the measured copy bandwidth by this factor (caches, a better copy).
PHYSICS_SLACK = 0.25
# A candidate's median tail (device work after its end event: timing.run_trial) may exceed the
# baselines' by MARGIN_SPREADS x their IQR + this. Sandbox-side and per call, it sees hidden
# work of microseconds that the judge's wall clock, with the channel's jitter, cannot.
TAIL_FLOOR_MS = 0.01
# ... plus this share of the candidate's own median trial: the synchronize after a long trial is
# slower (on the H200, 0.13 ms after a 10 ms trial whose side stream was joined, against 0.018 ms
# after the baselines' 0.09 ms ones). Work hidden past the end event gains a cheat at most this
# share of its reported time, and the fast cheats report almost none.
TAIL_FRACTION = 0.02
# A candidate's median L2 flush (timing.run_trial: the same 256 MB fills on the same device as in the
# baselines' trials, interleaved with them) may exceed the baselines' median by MARGIN_SPREADS x
# their IQR + this share of one fill (the median over timing.FLUSH_WRITES: the same bound in ms as
# when the flush was one fill) + this floor. Only device work the forward started on a stream that
# does not wait for the current one runs beside the flush (the device is synchronized before it);
# an honest forward's inputs are written on the current stream, so it never starts before it.
FLUSH_FRACTION = 0.05
FLUSH_FLOOR_MS = 0.005
# ... and may not fall below this share of it: the flush is the harness's object in the candidate's
# process, and one whose buffer was swapped for a small one, or whose writes were cut to none, leaves
# the L2 warm for the trials (fewer writes gain nothing: one flushes the L2, the others only give
# the launch its head start). The honest candidates' and the baselines' medians lie within a few
# percent of each other (0.0925 and 0.0930 ms on the H100).
FLUSH_SHORT_SHARE = 0.5


def spread(samples: Sequence[float]) -> Spread | None:
    if not samples:
        return None
    xs = sorted(float(x) for x in samples)
    if len(xs) == 1:
        q1 = q3 = xs[0]
    else:
        q1, _q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return Spread(n=len(xs), min_ms=xs[0], q1_ms=q1, median_ms=statistics.median(xs), q3_ms=q3, max_ms=xs[-1])


def clock_check(device: str, candidate: Sequence[tuple[float, float]], reference: Sequence[tuple[float, float]],
                floor_ms: float) -> tuple[ClockCheck, str | None]:
    """(figures, the finding's message or None). Each sample is (judge wall ms, reported ms)."""
    cand_over = [w - r for w, r in candidate]
    ref_over = [w - r for w, r in reference]
    kind = "cuda" if device.startswith("cuda") else "cpu"
    median_reported = statistics.median([r for _, r in candidate]) if candidate else 0.0
    ref_spread = spread(ref_over)
    iqr = (ref_spread.q3_ms - ref_spread.q1_ms) if ref_spread else 0.0
    margin = MARGIN_SPREADS * iqr + MARGIN_FRACTION[kind] * median_reported + MARGIN_FLOOR_MS[kind]
    figures = ClockCheck(candidate_overhead_ms=statistics.median(cand_over) if cand_over else 0.0,
                         reference_overhead_ms=statistics.median(ref_over) if ref_over else 0.0,
                         margin_ms=margin, floor_ms=floor_ms)
    too_fast = [r for _, r in candidate if r < floor_ms * PHYSICS_SLACK]
    if too_fast:
        return figures, (f"{len(too_fast)} trial(s) reported {min(too_fast):.4g} ms, less than writing the output "
                         f"once takes at this device's measured copy bandwidth ({floor_ms:.4g} ms): a forged time")
    if reference and candidate and figures.candidate_overhead_ms > figures.reference_overhead_ms + margin:
        return figures, (f"the judge's clock saw {figures.candidate_overhead_ms:.4g} ms per trial beyond the reported "
                         f"time, where the reference's protocol costs {figures.reference_overhead_ms:.4g} ms "
                         f"(margin {margin:.4g} ms): the reported times leave out work the candidate did (a "
                         "patched timer, work on a stream or thread the timing did not cover)")
    return figures, None


def _over_baselines(candidate: Sequence[float], reference: Sequence[float],
                    slack_ms: Callable[[float], float]) -> tuple[float, float, float] | None:
    """(the candidate's median, the baselines', the bound) when the candidate's median exceeds the
    baselines' median + MARGIN_SPREADS x their IQR + slack_ms(their median), else None: the rule the
    per-trial device figures (tails, flushes) share."""
    cand, ref = spread(candidate), spread(reference)
    if cand is None or ref is None:
        return None
    bound = ref.median_ms + MARGIN_SPREADS * (ref.q3_ms - ref.q1_ms) + slack_ms(ref.median_ms)
    return (cand.median_ms, ref.median_ms, bound) if cand.median_ms > bound else None


def tail_check(candidate: Sequence[float], reference: Sequence[float], trial_ms: float = 0.0) -> str | None:
    """The finding's message when the candidate's GPU work outlived its end event by more than the
    baselines' (the same protocol's own synchronize latency), else None. trial_ms: the candidate's
    median reported trial."""
    over = _over_baselines(candidate, reference, lambda _ref: TAIL_FLOOR_MS + TAIL_FRACTION * trial_ms)
    if over is None:
        return None
    cand, ref, bound = over
    return (f"forward returned while GPU work it queued ran on for a median {cand:.4g} ms past the end "
            f"event on the current stream (the baselines' {ref:.4g} ms, bound {bound:.4g} ms): work on a "
            "stream the current one never waits for, which the events do not time and a caller would read unfinished")


def flush_check(candidate: Sequence[float], reference: Sequence[float]) -> str | None:
    """The finding's message when the L2 flush ahead of the candidate's trials took longer than in
    the baselines' (work of the candidate's ran beside it, before the start event), else None. On
    the CPU both report no flush (0)."""
    over = _over_baselines(candidate, reference, lambda ref: FLUSH_FRACTION * ref / FLUSH_WRITES + FLUSH_FLOOR_MS)
    if over is None:
        return None
    cand, ref, bound = over
    return (f"the L2 flush before the start event took a median {cand:.4g} ms in the candidate's trials "
            f"against {ref:.4g} ms in the baselines' (bound {bound:.4g} ms): forward started device work "
            "on a stream that does not wait for the current one, which ran beside the flush, before the events "
            "began timing")


def short_flush_check(candidate: Sequence[float], reference: Sequence[float]) -> str | None:
    """The finding's message when the L2 flush ahead of the candidate's trials took less than
    FLUSH_SHORT_SHARE of the baselines' (the flush cut short in the candidate's process), else None.
    On the CPU both report no flush (0)."""
    cand, ref = spread(candidate), spread(reference)
    if cand is None or ref is None or ref.median_ms <= 0 or cand.median_ms >= FLUSH_SHORT_SHARE * ref.median_ms:
        return None
    return (f"the L2 flush before the start event took a median {cand.median_ms:.4g} ms in the candidate's trials "
            f"against {ref.median_ms:.4g} ms in the baselines': the harness's flush was cut short in the "
            "candidate's process, so its trials ran on an L2 the flush did not clear")


def judged_runtime(candidate: Sequence[tuple[float, float]],
                   reference: Sequence[tuple[float, float]]) -> float | None:
    """The candidate's median trial as the judge's clock measured it: its median wall time less
    the reference's median overhead and MARGIN_SPREADS times that overhead's interquartile range
    (so an honest candidate's figure stays its reported one). None without both samples."""
    if not candidate or not reference:
        return None
    ref_over = spread([w - r for w, r in reference])
    assert ref_over is not None
    wall = statistics.median(w for w, _ in candidate)
    return wall - ref_over.median_ms - MARGIN_SPREADS * (ref_over.q3_ms - ref_over.q1_ms)


def thread_check(candidate: Sequence[int | None], reference: Sequence[int | None], allowed: int | None) -> str | None:
    """The finding's message when the candidate's timed trials ran on more CPU threads than the
    baseline may use, else None. Each sample is how many of the sandbox's threads the kernel saw
    run a share of that call (channel.py, busy_threads): the judge's own count, so a candidate
    that raises torch's thread setting inside forward and puts it back before returning (which
    the sandbox's after-the-call look at the setting cannot see) is still counted. A quarter of
    the trials (two at least) must show it, so one helper waking once is not."""
    cand = [n for n in candidate if n is not None]
    if not allowed or not cand:
        return None
    limit = max([int(allowed)] + [n for n in reference if n is not None])
    over = [n for n in cand if n > limit]
    if len(over) < max(min(2, len(cand)), math.ceil(len(cand) / 4)):
        return None
    return (f"{len(over)} of {len(cand)} timed trials ran on up to {max(over)} CPU threads at once, where the "
            f"baseline gets {limit} (torch's thread setting is {allowed}): the candidate used more cores than "
            "the baseline it is compared with")


# On the CPU an output past checks.memory.FRESH_MAPPING_BYTES is a fresh mapping in every sandbox, and
# costs its forward the pages the kernel allocates and zeroes for it, a page fault each at first
# touch: about a third of a 4096x4096 ReLU's time on the 2-core box. A forward that meets its timed
# calls with pages already there (a ring of outputs, a pool a thread pre-touched between requests,
# buffers the untimed warm-up touched) moves that cost off the clock. The judge reads two figures
# of the sandbox around each run (channel.call_run), from /proc, where nothing in the sandbox can
# lower them: its minor faults, and the growth of its resident anonymous memory. Faults alone can
# be met cheaply (read faults on the zero page, MADV_POPULATE_READ, a memfd's pages mapped anew:
# red-team pass 21, ok at 1.5-2.2x against an honest 0.8-0.9x); anonymous memory grows only by
# pages the kernel allocated and zeroed, the honest cost (the sandbox keeps its latest outputs
# alive, HeldOutputs, and lets go of the older ones before a run, not during it). The honest
# figures are the eager baseline's own, at most one fault a 4 KiB page and the outputs' bytes (a
# fault maps 2 MiB where transparent huge pages serve the mapping; the baseline's temporaries count
# too, but a fused forward need not make them); a candidate must reach this share of each in three
# quarters of its timed runs.
FRESH_SHARE = 0.5
PAGE_BYTES = 4096
# ... where the faults' figure is at least this many a call (the baseline's outputs did land on fresh pages).
FRESH_MIN_FAULTS = 8


def _short_runs(candidate: Sequence[float | None], eager: Sequence[float | None],
                cap: float) -> tuple[list[float], int, float] | None:
    """(the candidate's runs under FRESH_SHARE of the honest figure, its runs, that figure) when a quarter
    of its runs (one at least) are, else None. Each sample is one run's figure per call; the honest
    figure is the eager baseline's median, at most `cap`."""
    cand = [f for f in candidate if f is not None]
    base = [f for f in eager if f is not None]
    if not cand or not base:
        return None
    honest = min(statistics.median(base), cap)
    low = [f for f in cand if f < FRESH_SHARE * honest]
    return (low, len(cand), honest) if len(low) >= max(1, math.ceil(len(cand) / 4)) else None


_TOUCHED_BEFORE = ("forward's outputs were on memory mapped and touched before the call (outputs reused, or "
                   "pages touched off the clock), whose cost an honest forward pays inside it")


def fresh_pages_check(candidate: Sequence[float | None], eager: Sequence[float | None],
                      fresh_bytes: int) -> str | None:
    """The finding's message when a quarter of the candidate's timed runs (one at least) took far fewer
    minor page faults a call than fresh outputs of `fresh_bytes` (the output leaves past
    FRESH_MAPPING_BYTES) cost the eager baseline's calls, else None. Each sample is one run's faults per
    call (Trial.faults). An honest forward's fresh outputs fault in every run; a cheat that touched the
    pages ahead in the untimed warm-up met the first run without them (cheat_warmup_prefault: 539 faults
    a call in its first run, 0 in its second, against the baseline's 512)."""
    short = _short_runs(candidate, eager, fresh_bytes / PAGE_BYTES) if fresh_bytes > 0 else None
    if short is None or short[2] < FRESH_MIN_FAULTS:
        return None
    low, runs, honest = short
    return (f"{len(low)} of {runs} timed runs took at most {max(low):.0f} page faults a call, where the eager "
            f"baseline's fresh {fresh_bytes / 2**20:.2f} MiB of outputs took {honest:.0f}: {_TOUCHED_BEFORE}")


def fresh_memory_check(candidate: Sequence[float | None], eager: Sequence[float | None], fresh_bytes: int,
                       slack_bytes: int) -> str | None:
    """The finding's message when a quarter of the candidate's timed runs (one at least) grew the sandbox's
    resident anonymous memory by far less a call than fresh outputs of `fresh_bytes` grew the eager
    baseline's, else None. Each sample is one run's growth in bytes per call (Trial.anon_growth). Only
    where the outputs are past twice what two reads of the figure may be off by (`slack_bytes`,
    proctree.rss_slack_bytes): on the 2-core box 512 KiB, on 16 cores 4 MiB."""
    if fresh_bytes <= 2 * slack_bytes:
        return None
    short = _short_runs(candidate, eager, fresh_bytes)
    if short is None:
        return None
    low, runs, honest = short
    return (f"{len(low)} of {runs} timed runs grew the sandbox's anonymous memory by at most "
            f"{max(max(low), 0) / 2**20:.2f} MiB a call, where the eager baseline's fresh {fresh_bytes / 2**20:.2f} MiB "
            f"of outputs grew it by {honest / 2**20:.2f} MiB: {_TOUCHED_BEFORE} (page faults that allocate nothing "
            "do not count)")


# CPU time of threads that ended during the timed trials is a finding past a floor and this share
# of the process's CPU time over the trials. The floor is ENDED_THREADS_SLACK_MS plus four ticks of
# the process clock read (user and system time, rounded down at each of two reads): 5 ms where the
# clock counts nanoseconds (an honest candidate then shows 0.0 ms), 45 ms at /proc's 10 ms tick.
ENDED_THREADS_SLACK_MS = 5.0
ENDED_THREADS_FRACTION = 0.05


# CPU time of processes of the sandbox's own during the timed trials (children it waited for, and
# processes below it) is a finding past this many ticks of /proc stat (the judge's harness starts
# none there; a compile would, and compiles come before the trials) and ENDED_THREADS_FRACTION of
# the sandbox's own.
PROCESSES_FLOOR_TICKS = 2


@dataclass(frozen=True)
class CpuSnapshot:
    """The sandbox's CPU time at one moment, as the judge reads it from outside: the whole
    process's (ended threads included; None where unreadable) at `tick_ms` resolution, each live
    thread's in ns, that of the children it waited for, and each process's below it (its
    children, theirs; zombies included) by pid, those two at /proc's tick (proctree.TICK_MS)."""
    process_ms: float | None
    tick_ms: float
    threads_ns: dict[str, int] | None
    children_ms: float | None = None
    below_ms: dict[int, float] | None = None


def hidden_cpu_check(before: CpuSnapshot, after: CpuSnapshot) -> str | None:
    """The finding's message when work the sandbox's live threads do not account for ran during
    the timed trials, else None:
    - threads that ended: what the process spent between the two snapshots beyond what its live
      threads account for (a thread started and joined inside forward, which no count of live
      threads sees);
    - processes of its own: a child's CPU time joins its parent's children's time once it is
      waited for (forked and waited for inside forward), and a process below the sandbox, started
      before the trials (a helper the model forked when it was built) or within them and never
      waited for, has CPU time of its own;
    - processes started within the trials and still below it (a zombie's time is lost to both)."""
    if None in (before.process_ms, after.process_ms, before.threads_ns, after.threads_ns):
        return None
    assert before.process_ms is not None and after.process_ms is not None
    assert before.threads_ns is not None and after.threads_ns is not None
    spent = after.process_ms - before.process_ms
    live = sum(ns - before.threads_ns.get(tid, 0) for tid, ns in after.threads_ns.items()) / 1e6
    ended = spent - live
    floor = ENDED_THREADS_SLACK_MS + 4 * max(before.tick_ms, after.tick_ms)
    if ended > max(floor, ENDED_THREADS_FRACTION * spent):
        return (f"threads that ended within the timed trials ran {ended:.0f} ms of the sandbox's {spent:.0f} ms of "
                "CPU time over them: forward ran work on threads of its own (started and joined inside the call), "
                "more cores than the baseline gets")
    waited = after.children_ms - before.children_ms \
        if before.children_ms is not None and after.children_ms is not None else 0.0
    below_before, below_after = before.below_ms or {}, after.below_ms or {}
    below = sum(ms - below_before.get(pid, 0.0) for pid, ms in below_after.items())
    if waited + below > max(PROCESSES_FLOOR_TICKS * TICK_MS, ENDED_THREADS_FRACTION * spent):
        return (f"processes of the sandbox's own ran {waited + below:.0f} ms of CPU time within the timed trials "
                f"({waited:.0f} ms in children it waited for, {below:.0f} ms in processes still below it), beside "
                f"its own {spent:.0f} ms: forward ran work in other processes, more cores than the baseline gets")
    started = [pid for pid in below_after if pid not in below_before]
    if before.below_ms is not None and started:
        return (f"{len(started)} process(es) started within the timed trials are still below the sandbox (running, "
                "or ended and never waited for): forward ran work in processes of its own, more cores than the "
                "baseline gets")
    return None


def copy_bandwidth(device: str) -> float:
    """Bytes per second one device-to-device copy reaches (read + write counted once each)."""
    size = (256 << 20) if device.startswith("cuda") else (32 << 20)
    src = torch.empty(size, dtype=torch.uint8, device=device)
    src.fill_(1)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(3):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * size / max(best, 1e-9)
