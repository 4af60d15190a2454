"""Where each sandbox's calls spend the time the judge's clock sees beyond the reported trial.

    HTAM_SANDBOX_TRACE=/tmp/trace.jsonl htam eval PROBLEM SOLUTION ...
    python3 tests/bench/trace_overhead.py /tmp/trace.jsonl [--skip 5]

The judge's clock rule (htam_engine/evaluate/clock.py) charges a candidate whatever its calls take
on the judge's wall clock beyond their reported times, less what the reference sandbox's calls
take beyond theirs: where an honest candidate's sandbox does more outside its timed window than
the reference's, the difference lands in its figure (KernelBench's events in its own process
never see it). This prints, per sandbox and model, the median of each phase of a call's own work
(the sandbox trace's phases, README "Diagnosing the judge"; "go" and "finish" hold the run's
other calls and are left out), the sum less the reported trial (the call's own work outside its
timed window), and each phase's difference against the reference sandbox's eager calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

# Spans that hold other calls of the same Go (trials back to back, then the replies), or the wait for it.
NOT_OWN = ("resolve", "go", "finish")


def summarize(rows: list[dict], skip: int) -> dict[tuple[str, str], dict[str, float]]:
    """(role, model) -> median ms of each own phase, 'own' (their sum), 'reported' (the trial's
    reported time) and 'untimed' (own less reported), over each group's calls after its first `skip` (warm-ups, compiles)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("kernels", "run") == "run":  # the work check's calls do the switch's work besides
            groups[(r["role"], r["model"])].append(r)
    out = {}
    for key, calls in groups.items():
        calls = calls[skip:] or calls
        phases = [p for p in calls[-1]["phases_ms"] if p not in NOT_OWN]
        med = {p: statistics.median(c["phases_ms"].get(p, 0.0) for c in calls) for p in phases}
        own = [sum(c["phases_ms"].get(p, 0.0) for p in phases) for c in calls]
        reported = [c["trial_ms"] or 0.0 for c in calls]
        med["own"] = statistics.median(own)
        med["reported"] = statistics.median(reported)
        med["untimed"] = statistics.median(o - t for o, t in zip(own, reported))
        med["calls"] = len(calls)
        out[key] = med
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=5, help="each group's first calls left out (warm-ups)")
    a = ap.parse_args()
    rows = [json.loads(line) for line in Path(a.trace).read_text().splitlines() if line.strip()]
    table = summarize(rows, a.skip)
    ref = table.get(("reference", "eager"))
    for (role, model), med in sorted(table.items()):
        cells = ", ".join(f"{p} {v * 1e3:.1f}" for p, v in med.items() if p != "calls")
        print(f"{role}/{model} ({med['calls']} calls), median us: {cells}")
        if ref is not None and role != "reference":
            diff = ", ".join(f"{p} {(v - ref.get(p, 0.0)) * 1e3:+.1f}" for p, v in med.items()
                             if p not in ("calls", "own", "reported"))
            print(f"    against reference/eager, us: {diff}")


if __name__ == "__main__":
    main()
