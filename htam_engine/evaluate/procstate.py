"""What another process of the same user can change in a sandbox from outside, without touching
its memory: its resource limits (prlimit), its scheduling policy and nice value
(sched_setscheduler, setpriority) and the CPUs it may run on (sched_setaffinity). Non-dumpable
does not protect these, and a lowered limit or priority cannot be raised again without privilege.

A candidate can reach the processes beside its own: the spare the judge forked for the next
candidate, the reference sandbox that times the baselines, and the zygote they are all forked
from (whose state each new sandbox inherits, and so reads as untouched against its own start).
The judge reads each one's state once it said it was ready (its own limits applied, before any
candidate code could run beside it) and compares before relying on it again
(judge.Judge.sibling_tamper).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

_LIMITS = {name: getattr(resource, name) for name in ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CPU",
                                                       "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
                                                       "RLIMIT_MEMLOCK", "RLIMIT_CORE") if hasattr(resource, name)}


@dataclass(frozen=True, slots=True)
class ThreadState:
    """One thread's scheduling: each thread has its own, set from outside by its thread id."""

    policy: int
    nice: int
    cpus: frozenset[int]

    @classmethod
    def read(cls, tid: int) -> "ThreadState":
        return cls(os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid), frozenset(os.sched_getaffinity(tid)))


@dataclass(frozen=True, slots=True)
class ProcessState:
    limits: tuple[tuple[str, int, int], ...]  # (name, soft, hard)
    main: ThreadState  # the process's own scheduling (its main thread's)
    # Every other thread's, by thread id: the main thread's alone left a reference sandbox's other
    # threads (where work runs on them) to be reniced or pinned unseen. Threads come and go (the
    # driver's, a thread pool's), so only those present at both reads are compared.
    threads: tuple[tuple[int, ThreadState], ...] = ()

    @classmethod
    def read(cls, pid: int) -> "ProcessState | None":
        """The process's state, or None where it cannot be read (gone, or not Linux)."""
        try:
            limits = tuple((name, *resource.prlimit(pid, r)) for name, r in _LIMITS.items())
            main = ThreadState.read(pid)
        except (OSError, AttributeError, ValueError):
            return None
        return cls(limits, main, _other_threads(pid))


def _other_threads(pid: int) -> tuple[tuple[int, ThreadState], ...]:
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit() and int(t) != pid)
    except OSError:
        return ()
    out = []
    for tid in tids:
        try:
            out.append((tid, ThreadState.read(tid)))
        except (OSError, ValueError):  # it ended meanwhile
            continue
    return tuple(out)


def changes(before: ProcessState | None, pid: int) -> str:
    """What differs in process `pid` from `before` ("" where nothing does, or it cannot be read)."""
    now = ProcessState.read(pid)
    if before is None or now is None or now == before:
        return ""
    said = [f"{a[0]} {a[1:]} -> {b[1:]}" for a, b in zip(before.limits, now.limits) if a != b]
    said += _scheduling(before.main, now.main, "")
    then = dict(before.threads)
    for tid, state in now.threads:
        if tid in then:
            said += _scheduling(then[tid], state, f"thread {tid}'s ")
    return ", ".join(said)


def _scheduling(was: ThreadState, now: ThreadState, whose: str) -> list[str]:
    """What differs in the scheduling (policy, nice, CPUs) of one process or thread."""
    return [f"{whose}{name} {_shown(getattr(was, name))} -> {_shown(getattr(now, name))}"
            for name in ("policy", "nice", "cpus") if getattr(was, name) != getattr(now, name)]


def _shown(value: object) -> object:
    return sorted(value) if isinstance(value, frozenset) else value
