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
  another number: ENOSYS.

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

# <linux/audit.h>, <asm/unistd.h>: the native ABI, its clone and prctl numbers (clone3 is 435 on both)
_ABIS = {"x86_64": (0xC000003E, 56, 157), "aarch64": (0xC00000B7, 220, 167)}
# the seccomp() call's number per ABI, SECCOMP_SET_MODE_FILTER and SECCOMP_FILTER_FLAG_SPEC_ALLOW
_SECCOMP_CALL = {"x86_64": 317, "aarch64": 277}
_SET_MODE_FILTER, _FLAG_SPEC_ALLOW = 1, 4
_EINVAL = 22
_CLONE3 = 435
_X32_BIT = 0x40000000
_CLONE_PARENT = 0x00008000
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
# BPF opcodes: load a word of seccomp_data, jumps on equal / set bits / greater-or-equal, return
_LD_ABS, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_ARCH_AT, _NR_AT, _ARG0_LOW_AT = 4, 0, 16  # offsets in struct seccomp_data (the ABIs are little-endian)


def _program(arch: int, clone: int, prctl: int) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump if true, jump if false, k) instructions."""
    # labels resolved below: ALLOW, EPERM, NOSYS sit at the end
    body: list[tuple[int, str | int, str | int, int]] = [
        (_LD_ABS, 0, 0, _ARCH_AT),
        (_JEQ, 0, "NOSYS", arch),
        (_LD_ABS, 0, 0, _NR_AT),
        (_JGE, "NOSYS", 0, _X32_BIT),
        (_JEQ, "NOSYS", 0, _CLONE3),
        (_JEQ, "CLONE", 0, clone),
        (_JEQ, "PRCTL", "ALLOW", prctl),
        ("CLONE", 0, 0, 0),
        (_LD_ABS, 0, 0, _ARG0_LOW_AT),
        (_JSET, "EPERM", "ALLOW", _CLONE_PARENT),
        ("PRCTL", 0, 0, 0),
        (_LD_ABS, 0, 0, _ARG0_LOW_AT),
        (_JEQ, "EPERM", "ALLOW", _PR_SET_CHILD_SUBREAPER),
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
    program = _program(*abi)
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
