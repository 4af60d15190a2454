"""Process limits of the judge's side: resource limits for sandboxes, Linux prctl flags for all.

A sandbox gets its limits right after the zygote forked it, before any candidate code exists,
and passes them on to every process it starts (compilers included).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import sys

from htam_engine import settings

_PR_SET_PDEATHSIG, _PR_GET_DUMPABLE, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 1, 3, 4, 36


# Where a sandbox's message shows a write stopped by its file size limit: Python's own
# (it ignores SIGXFSZ, so the write fails), a killed process's, a shell's or compiler's.
FILE_LIMIT_MARKERS = ("File too large", "SIGXFSZ", "File size limit exceeded")


def file_limit_note(message: str, mb: int | None) -> str:
    """What to add to the message of a failure that a sandbox's file size limit of `mb` MB caused
    ("" where it did not)."""
    if mb is None or not any(m in message for m in FILE_LIMIT_MARKERS):
        return ""
    return (f" (a sandbox may write no file larger than {mb} MB: the sandbox_file_mb setting, "
            f"{settings.BY_KEY['sandbox_file_mb'].env})")


def apply_sandbox_limits() -> None:
    """No core files, bounded open files, the configured address space and file size, a CPU-time
    backstop."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    as_mb = os.environ.get("HTAM_WORKER_AS_MB")
    if as_mb:
        limit = int(as_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # So a candidate cannot fill the disk that the caches and every later evaluation share
    # (per file: a few GiB leave room for a compiler's objects and a precompiled header).
    file_mb = os.environ.get("HTAM_WORKER_FILE_MB")
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if file_mb and (hard == resource.RLIM_INFINITY or hard > int(file_mb) << 20):
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(file_mb) << 20, int(file_mb) << 20))
    # A backstop, not the timeout: CPU seconds any one process of the tree may burn, so a
    # child that escaped every kill (its own session, re-parented) still ends one day.
    cpu_s = settings.worker_cpu_s()
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))


# What each of the judge's processes calls itself (its comm: what ps, top and the device's process
# list show): htam-judge, htam-zygote, and each sandbox by its role (htam-candidate, htam-reference).
PROCESS_PREFIX = "htam-"
# The kernel keeps 15 bytes of a process's name.
_COMM_BYTES = 15


def name_process(role: str) -> None:
    """Name this process PROCESS_PREFIX + role (gpu_holders tells the device's holders apart by it)."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as f:
        f.write((PROCESS_PREFIX + role)[:_COMM_BYTES])


def no_core_files() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def make_non_dumpable() -> bool:
    """/proc/<pid>/{mem,environ,fd} of this process belong to root and it refuses ptrace from
    other processes of the same user (root sees through it)."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def dumpable() -> bool | None:
    """This process's dumpable flag (None where it cannot be read)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))
    except (OSError, AttributeError):
        return None


def adopt_orphans() -> bool:
    """Become a child subreaper: a descendant whose parent exits is re-parented here, not to init,
    so it is still found (and killed) with this process's tree even after setsid()."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: int) -> bool:
    return _prctl(_PR_SET_PDEATHSIG, sig)
