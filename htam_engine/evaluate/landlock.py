"""A sandbox writes only into its own folders: a Landlock ruleset, applied right after the zygote
forked the sandbox (one thread, before any candidate code exists) and inherited by every process
and thread it starts.

Every sandbox runs as the user the judges run as, so without this a candidate could write
anything that user can: the private compile caches of the sandboxes of other judges on the
machine (`htam batch --jobs N`), where a wrapper planted under the name inductor looks for slowed
another judge's torch.compile baseline 400x (cheat_reference_private_cache), or the sessions and
memory of the user. With the ruleset a sandbox may change files only beneath

- its own compile caches' folder (zygote._private_compile_caches; TMPDIR points inside it too);
- the shared extension cache's folders a build needs (cache.SANDBOX_WRITABLE: builds, candidate
  files, lock files; what a sandbox can plant there the judge already checks: BuildRecords). Not
  the precompiled headers', which the judge builds (pch.wanted);
- the device files (open for writing: /dev/null, a GPU's /dev/nvidia*) and /dev/shm (Python's
  multiprocessing semaphores, which torch.compile's worker pool uses; what a sandbox leaves there
  goes when it goes: shm_sweep);
- the files of its own process's /proc folder: the GPU driver names each thread it starts through
  /proc/self/task/<tid>/comm, and where it may not, cuInit fails with error 304 ("OS call failed",
  every sandbox on a GPU machine). Not another process's: their oom_score_adj or autogroup (their
  scheduling) stay refused. A rule binds to the folder's inode, which procfs makes afresh when
  a dropped entry is looked up again, so the process holds its folder open (own_process_folder).

Reads stay open (torch, the compilers and the CUDA libraries read from everywhere); README says
what that leaves. The ruleset also scopes signals (ABI 6 on): a sandbox cannot signal a process
outside its own domain, so it cannot stop or kill another judge's sandbox. Where the kernel has no
Landlock (before 5.13, or not enabled at boot), nothing is installed and `install` says so, as
seccomp.install does.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from typing import Sequence

# <asm/unistd.h>: the three calls have the same numbers on x86-64 and aarch64
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# <linux/landlock.h>: the filesystem rights that change something, and the ABI that brought each
WRITE_FILE = 1 << 1
_ABI1_WRITES = (WRITE_FILE | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11
                | 1 << 12)  # write, remove dir / file, make char / dir / reg / sock / fifo / block / sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_SCOPE_SIGNAL = 1 << 1  # ABI 6


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where it has none."""
    if platform.machine() not in ("x86_64", "aarch64"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


def writes(abi: int) -> int:
    """Every right that changes a file or folder, as far as ABI `abi` knows them."""
    return _ABI1_WRITES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)


# per process id: a descriptor holding that process's /proc folder (own_process_folder)
_OWN_PROCESS_FOLDERS: dict[int, int] = {}


def own_process_folder() -> tuple[str, int]:
    """This process's /proc/<pid>, and a descriptor (O_PATH) that holds it open for as long as the
    process keeps the descriptor: the rule on its files stays on the inode the process's threads
    are looked up under (module docstring)."""
    pid = os.getpid()
    if pid not in _OWN_PROCESS_FOLDERS:
        _OWN_PROCESS_FOLDERS[pid] = os.open(f"/proc/{pid}", os.O_PATH | os.O_CLOEXEC)
    return f"/proc/{pid}", _OWN_PROCESS_FOLDERS[pid]


def held_descriptors() -> tuple[int, ...]:
    """The descriptors this process's rulesets rely on (own_process_folder's, where one was taken),
    for a process that closes every other descriptor it has."""
    fd = _OWN_PROCESS_FOLDERS.get(os.getpid())
    return () if fd is None else (fd,)


def install(beneath: Sequence[str], files: Sequence[str] = (), devices: str = "/dev", *,
            own_process: bool = True) -> str | None:
    """Restrict this thread, and every process and thread it starts, to writing beneath the
    folders `beneath` (all of their content), into the existing `files`, into the device files
    beneath `devices` (opened for writing, nothing made or removed there) and, with `own_process`,
    into this process's /proc files (kept open: own_process_folder); signals only within.
    A path that does not exist is left out. None once installed, else why it was not."""
    abi = abi_version()
    if abi == 0:
        return "the kernel has no Landlock"
    handled = writes(abi)
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net (ABI 4), scoped (ABI 6)
    attr = struct.pack("=QQQ", handled, 0, scoped) if abi >= 6 else (
        struct.pack("=QQ", handled, 0) if abi >= 4 else struct.pack("=Q", handled))
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(ctypes.c_long(_CREATE_RULESET), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        # a file's rule (and a device's) holds only the rights on the file itself: writing, and
        # truncating (a shell's `> /dev/null` opens it with O_TRUNC)
        on_file = WRITE_FILE | _TRUNCATE
        proc = [own_process_folder()[0]] if own_process else []
        rules = [(p, handled) for p in beneath] + [(p, on_file) for p in [*files, devices, *proc]]
        for path, access in rules:
            problem = _allow(libc, ruleset, path, access & handled)
            if problem:
                return problem
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
        if libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
        return None
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> str | None:
    """Add a path-beneath rule; None when added or when `path` does not exist, else what failed."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"landlock: {path}: {e.strerror}"
    try:
        if not os.path.isdir(path):
            access &= WRITE_FILE | _TRUNCATE  # the kernel refuses a file's rule with rights on a folder
        # struct landlock_path_beneath_attr is packed: __u64 allowed_access, __s32 parent_fd
        rule = struct.pack("=Qi", access, fd)
        buf = ctypes.create_string_buffer(rule, len(rule))
        if libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), buf,
                        ctypes.c_uint32(0)) != 0:
            return f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}"
        return None
    finally:
        os.close(fd)
