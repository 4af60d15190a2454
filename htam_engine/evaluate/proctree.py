"""The process table as Linux's /proc shows it, read lean: a process's descendants and its state.

The judge stops a candidate's whole process tree around the baseline calls of every timed round
(SandboxProcess.paused), reading the tree each time. psutil's children(recursive=True) opens and
parses every process's stat file through several layers of Python: ~2 ms a read on the 2-core
box with ~65 processes, 40 % of a CPU evaluation's timed rounds, and more on a GPU box running
16 judges, inside the device's exclusive timing lock. Here the kernel's children lists (a read
per thread of the tree: 0.17 ms for a small tree on the 2-core box); where the kernel keeps none,
or there is no /proc (not Linux), psutil answers instead.
"""

from __future__ import annotations

import os

PROC = "/proc"
# A process's state letters that mean it runs no more (stopped, traced, a zombie, dead).
SETTLED_STATES = frozenset("TtZXx")


def _stat_tail(pid: int) -> bytes | None:
    """/proc/<pid>/stat after "pid (comm) " (comm may hold spaces and parentheses, so read after the
    last ')'); None when the process is gone."""
    try:
        fd = os.open(f"{PROC}/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data[data.rfind(b")") + 2:]


def _state(pid: int) -> str | None:
    """The state letter in /proc/<pid>/stat; None when the process is gone."""
    tail = _stat_tail(pid)
    return (tail[:1].decode("ascii", "replace") or None) if tail is not None else None


# /proc's CPU times count in ticks of this many ms (USER_HZ: 10 ms on Linux).
TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


def cpu_ticks_ms(pid: int) -> tuple[float, float] | None:
    """(the process's own CPU time, that of the children it waited for), in ms at TICK_MS
    resolution (utime + stime, cutime + cstime); None when the process is gone."""
    tail = _stat_tail(pid)
    try:
        fields = tail.split() if tail is not None else None
        return None if fields is None else \
            ((int(fields[11]) + int(fields[12])) * TICK_MS, (int(fields[13]) + int(fields[14])) * TICK_MS)
    except (ValueError, IndexError):
        return None


def minor_faults(pid: int) -> int | None:
    """The page faults the process's threads (the ended ones too) took without reading a disk
    (minflt): a first touch of a freshly mapped page is one. The kernel counts them; nothing in the
    process can lower the figure. None when the process is gone."""
    tail = _stat_tail(pid)
    try:
        return int(tail.split()[7]) if tail is not None else None
    except (ValueError, IndexError):
        return None


def memory_status(pid: int) -> tuple[int | None, bool | None]:
    """(the process's resident anonymous memory in bytes, whether transparent huge pages may serve it)
    from /proc/<pid>/status, readable while it is non-dumpable; Nones when gone or not shown.

    RssAnon grows only by pages the kernel allocated and zeroed for the process: a read of an
    untouched page maps the shared zero page, and a memfd's pages count as shared memory. Since
    Linux 6.2 the kernel keeps it per CPU and /proc shows the sum folded so far: each CPU holds back
    less than percpu_counter_batch pages (rss_slack_bytes). THP_enabled is 0 once the process has
    turned huge pages off (prctl PR_SET_THP_DISABLE), which it can undo."""
    anon: int | None = None
    thp: bool | None = None
    try:
        with open(f"{PROC}/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith(b"THP_enabled:"):
                    thp = line.split()[1] != b"0"
    except (OSError, ValueError, IndexError):
        return None, None
    return anon, thp


def rss_slack_bytes() -> int:
    """How far apart two reads of memory_status's RssAnon may be from the true change between them: each
    CPU's share not yet folded in is under percpu_counter_batch = max(32, 2 x CPUs) pages, at each read."""
    cpus = os.cpu_count() or 1
    return 2 * max(32, 2 * cpus) * cpus * os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 1 << 30


def cpu_clock_ms(pid: int) -> float | None:
    """The process's CPU time (every thread it ever had) to the nanosecond, from its CPU clock
    (clock_getcpuclockid: any process's may be read), in ms; None where libc or the kernel does
    not lend it."""
    import ctypes
    import time

    try:
        clock = ctypes.c_int()
        if ctypes.CDLL(None, use_errno=True).clock_getcpuclockid(ctypes.c_int(pid), ctypes.byref(clock)) != 0:
            return None
        return time.clock_gettime_ns(clock.value) / 1e6
    except (OSError, AttributeError):
        return None


def cpu_ms(pid: int) -> float:
    """A process's own CPU time in ms: its CPU clock, else /proc stat's ticks (0 once it is gone)."""
    precise = cpu_clock_ms(pid)
    return precise if precise is not None else (cpu_ticks_ms(pid) or (0.0, 0.0))[0]


def cpu_with_reaped_ms(pid: int) -> float:
    """A process's own CPU time and that of the children it waited for, in ms: a grandchild forked
    and reaped by a helper below the sandbox leaves its time only in the helper's children's time
    (cheat_grandchild_reaped, red-team pass 11: half of every call there, ok at 0.21x against an
    honest 0.09x on the CPU)."""
    return cpu_ms(pid) + (cpu_ticks_ms(pid) or (0.0, 0.0))[1]


def _children_files() -> bool:
    """Whether the kernel lists each thread's children (/proc/<pid>/task/<tid>/children,
    CONFIG_PROC_CHILDREN): then a tree is read in time of its own size."""
    return os.path.exists(f"{PROC}/{os.getpid()}/task/{os.getpid()}/children")


CHILDREN_FILES = _children_files()


def _children(pid: int) -> list[int]:
    """pid's children from its threads' children files (a child is listed under the thread that forked it)."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"{PROC}/{pid}/task/{tid}/children", "rb") as f:
                kids.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return kids


def descendants(root: int) -> list[int]:
    """Every process below `root` (children, theirs, ...), as the process table has them now."""
    if not CHILDREN_FILES:
        import psutil

        try:
            return [c.pid for c in psutil.Process(root).children(recursive=True)]
        except psutil.Error:
            return []
    found: list[int] = []
    todo = [root]
    while todo:
        kids = _children(todo.pop())
        found.extend(kids)
        todo.extend(kids)
    return found


def waiting(pid: int) -> bool:
    """Whether the process sleeps (blocked: in a read, say), is stopped or is gone: it runs nothing now."""
    if not os.path.isdir(PROC):
        import psutil

        try:
            return psutil.Process(pid).status() != psutil.STATUS_RUNNING
        except psutil.Error:
            return True
    state = _state(pid)
    return state is None or state in SETTLED_STATES or state == "S"


def settled(pid: int) -> bool:
    """Whether the process is stopped, traced, a zombie or gone (it runs nothing more)."""
    if not os.path.isdir(PROC):
        import psutil

        try:
            return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP,
                                                    psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
        except psutil.Error:
            return True
    state = _state(pid)
    return state is None or state in SETTLED_STATES
