"""A sandbox's process tree stays its own: a seccomp filter, installed right after the zygote
forked the sandbox (before any candidate code exists) and inherited by every process it starts.

The judge stops and counts a sandbox's processes by its tree (every process below it; it is their
child subreaper, so an orphan comes back to it) and its process group. A process cloned with
CLONE_PARENT is its parent's sibling: the zygote's child, outside both, where a candidate's helper
computed half of every call on another core (ok at up to 1.19x against an honest 0.11-0.18x), or,
in a process group of its own, wrote a run's outputs while the judge had the candidate stopped
(ok at 1.02-1.75x); tests/htam_engine/evaluate/cheats/cheat_clone_parent.py probes the filter.
The filter answers:

- clone with CLONE_PARENT, and prctl(PR_SET_CHILD_SUBREAPER) (which would send orphans past the
  sandbox to the zygote): EPERM;
- clone3, whose flags lie in memory a filter cannot read: ENOSYS, and the C library falls back
  to clone (glibc since 2.34 does so for threads and posix_spawn alike);
- any syscall of another ABI (32-bit int 0x80 calls, x32), which could name the same clone by
  another number: ENOSYS;
- System V IPC's shmget, semget and msgget: EPERM. Their objects belong to no process and stay
  until removed or the host reboots: 18 segments of 256 MB, each attached, filled and detached so
  that the address-space limit saw one at a time, kept 4.6 GB of the host's memory after their
  sandbox and its judge were gone (red-team pass 26, cheat_sysv_shm_leftover). Nothing a kernel
  needs uses them (Python's multiprocessing, PyTorch and NCCL share memory through /dev/shm,
  which shm_sweep cleans). POSIX message queues (mq_open) likewise: they outlived their sandbox
  (red-team pass 30, cheat_mqueue_leftover), no sweep sees them, and nothing a kernel needs uses
  them;
- a chmod (chmod, fchmod, fchmodat, fchmodat2) to a mode without the owner's read and write
  bits: EPERM. Landlock governs writes, not a file's mode, so a sandbox could take the write bit
  off the cache's shared folders (no later build could make its lock: every later candidate a
  compile error, for good) or off its own /dev/shm folder (the sweep could not empty it: 1.5 GB
  kept), or lock the user's own files away (cheat_chmod_locks, cheat_shm_chmod_leftover). The
  owner's search bit is not asked for: a filter cannot tell a folder from a file, and
  torch.compile sets 0644 on its outputs; a folder of the judge's left without it (or made
  without it: a mode at creation is the umask's) is given its bits back by the judge where it
  meets one (cache.py, owned_tree.py);
- fcntl's record locks and leases (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE):
  EPERM. htam's processes exclude each other with record locks (record_lock.py) on files a sandbox
  may read: a flock, which needs no more than reading, held the judges' timing lock and every
  build lock from the judges and another judge's honest candidate (red-team passes 27 and 28), and
  a lease on a file stalls whoever opens it for writing. What a sandbox runs takes flocks (torch's
  compile caches do, through filelock), which no record lock conflicts with.

Threads, fork, vfork and posix_spawn (compilers, build tools) are untouched. Where the kernel or
the machine's ABI is not one this knows (x86-64, aarch64), nothing is installed and `install`
says so.

The filter is installed through the seccomp() call with SECCOMP_FILTER_FLAG_SPEC_ALLOW, not
prctl(PR_SET_SECCOMP): a kernel whose speculation mitigations are in their "seccomp" mode (the
default of x86 kernels before 5.16: spec_store_bypass_disable=seccomp, spectre_v2_user=seccomp)
otherwise forces them on every filtered process: speculative store bypass disabled, and an
indirect branch predictor barrier each time it is switched in, so the host code of a forward
(Python, Triton's launcher) runs cold after every wait, time the device waits for the launch
inside a trial's events (the candidate's kernel timed slower than in KernelBench's process, which
has no filter). What those mitigations guard is a process's memory against code in the same
process or on a sibling thread of the core; a sandbox holds nothing of the judge's (its inputs
are the call's own, the verdict is in the judge's process), so they would guard nothing here.
Where the kernel lacks the flag (before 4.17) the filter is installed through prctl as before.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from dataclasses import dataclass

@dataclass(frozen=True)
class _Abi:
    """<linux/audit.h>, <asm/unistd.h>: an ABI's audit arch and the syscall numbers the filter names."""

    arch: int
    clone: int
    prctl: int
    fcntl: int
    refused: tuple[int, ...]  # System V IPC's gets (shmget, semget, msgget) and mq_open
    modes: tuple[tuple[int, int], ...]  # (chmod-like call, the index of its mode argument)


_ABIS = {
    "x86_64": _Abi(0xC000003E, clone=56, prctl=157, fcntl=72, refused=(29, 64, 68, 240),
                   modes=((90, 1), (91, 1), (268, 2), (452, 2))),  # chmod, fchmod, fchmodat, fchmodat2
    "aarch64": _Abi(0xC00000B7, clone=220, prctl=167, fcntl=25, refused=(194, 190, 186, 180),
                    modes=((52, 1), (53, 2), (452, 2))),  # fchmod, fchmodat, fchmodat2 (no chmod)
}
# the seccomp() call's number per ABI, SECCOMP_SET_MODE_FILTER and SECCOMP_FILTER_FLAG_SPEC_ALLOW
_SECCOMP_CALL = {"x86_64": 317, "aarch64": 277}
_SET_MODE_FILTER, _FLAG_SPEC_ALLOW = 1, 4
_EINVAL = 22
_CLONE3 = 435
_X32_BIT = 0x40000000
_CLONE_PARENT = 0x00008000
_PR_SET_CHILD_SUBREAPER = 36
# <fcntl.h>: the commands that take a record lock or a lease (F_SETLK, F_SETLKW, F_OFD_SETLK,
# F_OFD_SETLKW, F_SETLEASE); F_GETLK and the rest go
_LOCKING_COMMANDS = (6, 7, 37, 38, 1024)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
# A mode a chmod may set: the owner keeps reading and writing (stat.S_IRUSR | stat.S_IWUSR).
_OWNER_BITS = 0o600
# BPF opcodes: load a word of seccomp_data, AND the accumulator with a constant, jumps on equal /
# set bits / greater-or-equal, return
_LD_ABS, _AND, _JEQ, _JSET, _JGE, _RET = 0x20, 0x54, 0x15, 0x45, 0x35, 0x06
_ARCH_AT, _NR_AT, _ARGS_AT = 4, 0, 16  # offsets in struct seccomp_data (the ABIs are little-endian)


def _arg_low(index: int) -> int:
    """The offset of argument `index`'s low word in struct seccomp_data."""
    return _ARGS_AT + 8 * index


def _program(abi: _Abi) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump if true, jump if false, k) instructions."""
    mode_args = sorted({index for _, index in abi.modes})
    # labels resolved below: ALLOW, EPERM, NOSYS sit at the end
    body: list[tuple[int | str, str | int, str | int, int]] = [
        (_LD_ABS, 0, 0, _ARCH_AT),
        (_JEQ, 0, "NOSYS", abi.arch),
        (_LD_ABS, 0, 0, _NR_AT),
        (_JGE, "NOSYS", 0, _X32_BIT),
        (_JEQ, "NOSYS", 0, _CLONE3),
        (_JEQ, "CLONE", 0, abi.clone),
        (_JEQ, "PRCTL", 0, abi.prctl),
        (_JEQ, "FCNTL", 0, abi.fcntl),
        *[(_JEQ, "EPERM", 0, nr) for nr in abi.refused],
        *[(_JEQ, f"MODE{index}", 0, nr) for nr, index in abi.modes],
        (_RET, 0, 0, _RET_ALLOW),
        ("CLONE", 0, 0, 0),
        (_LD_ABS, 0, 0, _arg_low(0)),
        (_JSET, "EPERM", "ALLOW", _CLONE_PARENT),
        ("PRCTL", 0, 0, 0),
        (_LD_ABS, 0, 0, _arg_low(0)),
        (_JEQ, "EPERM", "ALLOW", _PR_SET_CHILD_SUBREAPER),
        ("FCNTL", 0, 0, 0),
        (_LD_ABS, 0, 0, _arg_low(1)),
        *[(_JEQ, "EPERM", 0, command) for command in _LOCKING_COMMANDS],
        (_RET, 0, 0, _RET_ALLOW),
    ]
    for index in mode_args:
        body += [(f"MODE{index}", 0, 0, 0), (_LD_ABS, 0, 0, _arg_low(index)), (_AND, 0, 0, _OWNER_BITS),
                 (_JEQ, "ALLOW", "EPERM", _OWNER_BITS)]
    body += [
        ("ALLOW", 0, 0, 0),
        (_RET, 0, 0, _RET_ALLOW),
        ("EPERM", 0, 0, 0),
        (_RET, 0, 0, _RET_ERRNO | _EPERM),
        ("NOSYS", 0, 0, 0),
        (_RET, 0, 0, _RET_ERRNO | _ENOSYS),
    ]
    labels: dict[str, int] = {}
    code: list[tuple[int | str, str | int, str | int, int]] = []
    for ins in body:
        if isinstance(ins[0], str):
            labels[ins[0]] = len(code)
        else:
            code.append(ins)
    out = []
    for i, (op, jt, jf, k) in enumerate(code):
        rel = [labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
        out.append((int(op), rel[0], rel[1], k))
    return out


def install() -> str | None:
    """Install the filter on this process (and so on all it will start); None once installed, else
    why it was not (an unknown ABI, a kernel without seccomp filters)."""
    abi = _ABIS.get(platform.machine())
    if abi is None:
        return f"no seccomp filter for the {platform.machine()} ABI"
    program = _program(abi)
    raw = b"".join(struct.pack("HBBI", op, jt, jf, k) for op, jt, jf, k in program)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Prog(len(program), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(_SECCOMP_CALL[platform.machine()]), ctypes.c_uint(_SET_MODE_FILTER),
                    ctypes.c_uint(_FLAG_SPEC_ALLOW), ctypes.c_void_p(ctypes.addressof(prog))) == 0:
        return None
    if ctypes.get_errno() != _EINVAL:  # EINVAL: a kernel without the flag (the module docstring)
        return f"seccomp(SECCOMP_SET_MODE_FILTER): {os.strerror(ctypes.get_errno())}"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}"
    return None
