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

import functools
import os
import resource
from dataclasses import dataclass
from typing import Callable

# Every resource limit Linux has, by its number where Python's resource module lacks the name
# (RLIMIT_LOCKS): the nine it read before left SIGPENDING, MSGQUEUE, RTPRIO, RTTIME, NICE, LOCKS
# and RSS to be set on the siblings unseen (cheat_sched_attr_unseen, red-team pass 11).
_LINUX_LIMITS = {"RLIMIT_CPU": 0, "RLIMIT_FSIZE": 1, "RLIMIT_DATA": 2, "RLIMIT_STACK": 3, "RLIMIT_CORE": 4,
                 "RLIMIT_RSS": 5, "RLIMIT_NPROC": 6, "RLIMIT_NOFILE": 7, "RLIMIT_MEMLOCK": 8, "RLIMIT_AS": 9,
                 "RLIMIT_LOCKS": 10, "RLIMIT_SIGPENDING": 11, "RLIMIT_MSGQUEUE": 12, "RLIMIT_NICE": 13,
                 "RLIMIT_RTPRIO": 14, "RLIMIT_RTTIME": 15}
_LIMITS = {name: getattr(resource, name, number) for name, number in _LINUX_LIMITS.items()}

# sched_getattr(2): its number per ABI, and struct sched_attr's fields past size and policy (flags,
# nice, priority, runtime, deadline, period, utilization clamps): an EEVDF slice (sched_runtime under
# SCHED_OTHER) or a clamp set with sched_setattr leaves policy and nice as they were.
_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}
_SCHED_ATTR = "<IIQiIQQQII"


@dataclass(frozen=True, slots=True)
class ThreadState:
    """One thread's scheduling: each thread has its own, set from outside by its thread id."""

    policy: int
    nice: int
    cpus: frozenset[int]
    attr: tuple[int, ...] = ()  # sched_getattr's flags, runtime, deadline, period and clamps (() unread)

    @classmethod
    def read(cls, tid: int) -> "ThreadState":
        return cls(os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid),
                   frozenset(os.sched_getaffinity(tid)),
                   _sched_attr(tid))


def _sched_attr(tid: int) -> tuple[int, ...]:
    """sched_getattr's fields beyond policy and nice for one thread; () where the call is not lent."""
    import ctypes
    import struct

    call = _sched_getattr()
    if call is None:
        return ()
    buf = ctypes.create_string_buffer(struct.calcsize(_SCHED_ATTR))
    if call(tid, buf, len(buf), 0) != 0:
        return ()
    _size, _policy, flags, _nice, _priority, runtime, deadline, period, util_min, util_max = \
        struct.unpack(_SCHED_ATTR, buf.raw)
    return (flags, runtime, deadline, period, util_min, util_max)


@functools.cache
def _sched_getattr() -> Callable[..., int] | None:
    """sched_getattr(tid, attr, size, flags) through libc's syscall, looked up once (the judge reads
    every thread of each sibling before and after each evaluation); None off x86-64 and aarch64."""
    import ctypes
    import platform

    number = _SCHED_GETATTR.get(platform.machine())
    if number is None:
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    return functools.partial(syscall, number)


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
    """What differs in the scheduling (policy, nice, CPUs, sched_attr's other fields) of one process or thread."""
    return [f"{whose}{name} {_shown(getattr(was, name))} -> {_shown(getattr(now, name))}"
            for name in ("policy", "nice", "cpus", "attr") if getattr(was, name) != getattr(now, name)]


def _shown(value: object) -> object:
    return sorted(value) if isinstance(value, frozenset) else value
