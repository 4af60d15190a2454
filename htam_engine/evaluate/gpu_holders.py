"""Who holds a GPU's memory right now, by the kind of process: what the judge says when an
evaluation runs out of device memory beside others.

An out-of-memory beside other evaluations is re-run alone (Judge.evaluate), and the message it
leaves says how much of the device each kind of htam process held at the moment it ran out: the
judges, the zygotes and each role of sandbox name themselves (limits.name_process), so the
device's process list tells them apart. Read from nvidia-smi, bounded in time; None where it
cannot be read (no nvidia-smi, another PID namespace than the driver's, a timeout). It never
changes a verdict.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from htam_engine.evaluate.limits import PROCESS_PREFIX

# nvidia-smi answers in well under a second; a device that hangs it must not hang the judge.
QUERY_TIMEOUT_S = 3.0
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Holder:
    """One process holding device memory."""

    pid: int
    kind: str  # its htam name (htam-judge, htam-candidate, ...), else OTHER
    bytes: int


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            name = f.read().strip()
    except OSError:  # gone, or in another PID namespace than the driver's
        return OTHER
    return name if name.startswith(PROCESS_PREFIX) else OTHER


def parse(listing: str) -> list[tuple[int, int]]:
    """(pid, bytes) from `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`
    (MiB); lines it cannot read are skipped."""
    out = []
    for line in listing.splitlines():
        pid, _, mib = (part.strip() for part in line.partition(","))
        if pid.isdigit() and mib.isdigit():
            out.append((int(pid), int(mib) << 20))
    return out


def holders() -> list[Holder] | None:
    """Every process holding memory on any visible GPU, or None where the list cannot be read."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        listing = subprocess.run([exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [Holder(pid, _kind(pid), size) for pid, size in parse(listing)]


def summary(found: list[Holder] | None) -> str:
    """'htam-candidate 12 (58.3 GiB, at most 9.1), htam-judge 16 (20.0 GiB, at most 1.3), ...',
    the kinds holding most first; '' where nothing was read."""
    if not found:
        return ""
    gib = float(1 << 30)
    by_kind: dict[str, list[int]] = {}
    for h in found:
        by_kind.setdefault(h.kind, []).append(h.bytes)
    parts = [f"{kind} {len(sizes)} ({sum(sizes) / gib:.1f} GiB, at most {max(sizes) / gib:.1f})"
             for kind, sizes in sorted(by_kind.items(), key=lambda kv: -sum(kv[1]))]
    return ", ".join(parts)


def described() -> str:
    """The device's holders now, for a message: ' (held on the device then: ...)', or ''."""
    text = summary(holders())
    return f" (held on the device then: {text})" if text else ""
