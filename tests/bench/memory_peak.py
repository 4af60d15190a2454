"""What a judge's GPU memory peak is made of, from a snapshot HTAM_JUDGE_MEMORY_HISTORY wrote
(htam_engine/evaluate/memory_history.py):

    python3 tests/bench/memory_peak.py judge-1234-1.pickle [--top 12]

Replays the allocator's trace and prints, at the moment the judge's allocated memory peaked and
at the moment its reserved memory (segments) peaked, the live blocks grouped by the innermost
frame of htam's own code that allocated them (GiB each), so the sets an evaluation holds at
once are named by the line that made them.
"""

from __future__ import annotations

import argparse
import collections
import pickle
import sys
from typing import Any

GIB = float(1 << 30)


def site(frames: list[dict[str, Any]]) -> str:
    """The innermost frame in htam's code (else the innermost frame at all)."""
    for f in frames or []:
        if "htam_engine" in f.get("filename", ""):
            path = f["filename"].split("htam_engine/", 1)[1]
            return f"{path}:{f.get('line')} {f.get('name')}"
    if frames:
        f = frames[0]
        return f"{f.get('filename', '?')}:{f.get('line')} {f.get('name')}"
    return "(no stack)"


def replay(events: list[dict[str, Any]], stop: int | None = None) -> tuple[dict[int, tuple[int, str]], int, int, int, int]:
    """Replay the trace (up to event `stop`): the blocks live then, allocated and reserved bytes
    then, and the indices of the events after which allocated and reserved first peaked."""
    live: dict[int, tuple[int, str]] = {}
    segments: dict[int, int] = {}
    allocated = reserved = 0
    top_alloc = top_reserved = (-1, -1)  # (bytes, index)
    for i, ev in enumerate(events[:stop]):
        action, addr, size = ev.get("action"), ev.get("addr"), int(ev.get("size", 0))
        if action == "alloc":
            live[addr] = (size, site(ev.get("frames", [])))
            allocated += size
        elif action == "free_completed" and addr in live:
            allocated -= live.pop(addr)[0]
        elif action == "segment_alloc":
            segments[addr] = size
            reserved += size
        elif action == "segment_free" and addr in segments:
            reserved -= segments.pop(addr)
        if allocated > top_alloc[0]:
            top_alloc = (allocated, i)
        if reserved > top_reserved[0]:
            top_reserved = (reserved, i)
    return live, allocated, reserved, top_alloc[1], top_reserved[1]


def show(title: str, events: list[dict[str, Any]], at: int, top: int) -> None:
    live, allocated, reserved, _, _ = replay(events, at + 1)
    by_site: collections.Counter[str] = collections.Counter()
    for size, where in live.values():
        by_site[where] += size
    print(f"{title}: allocated {allocated / GIB:.2f} GiB, reserved {reserved / GIB:.2f} GiB "
          f"(cached and free: {(reserved - allocated) / GIB:.2f} GiB)")
    for where, size in by_site.most_common(top):
        print(f"  {size / GIB:8.2f} GiB  {where}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshot")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    with open(a.snapshot, "rb") as f:
        snap = pickle.load(f)
    for device, events in enumerate(snap.get("device_traces", [])):
        if not events:
            continue
        *_, at_allocated, at_reserved = replay(events)
        print(f"device {device}: {len(events)} allocator events")
        show("at the allocated peak", events, at_allocated, a.top)
        show("at the reserved peak", events, at_reserved, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
