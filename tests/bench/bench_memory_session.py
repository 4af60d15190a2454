"""Benchmark: save/load of a 2,000-step session and of a bank with 10,000 strategies and
100,000 transition records, and direction selection on that bank.

    python3 tests/bench/bench_memory_session.py [--steps 2000] [--strategies 10000] [--records 100000]

Targets (issue 3, on a 2-core CPU machine): each save < 0.5 s, each load < 1 s, selection < 10 ms.
Prints wall time (what a user waits) and process CPU time (what this process itself spent,
less sensitive to other load on a shared machine), the median of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "htam_engine" / "session"), str(HERE.parent / "htam_engine" / "memory")]

from htg_builders import grow, random_history, random_state  # noqa: E402
from session_builders import build_session  # noqa: E402

from htam_engine.memory import HTG, load_bank, save_bank, select_direction  # noqa: E402
from htam_engine.session import load_session, save_session  # noqa: E402
from htam_engine.session.packing import forget  # noqa: E402


def measure(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def line(name: str, wall: float, cpu: float, target: float, extra: str = "") -> None:
    verdict = "ok" if wall < target else ("ok on CPU time" if cpu < target else "OVER")
    print(f"{name:<34} wall {wall * 1e3:8.1f} ms   cpu {cpu * 1e3:8.1f} ms   target < {target * 1e3:.0f} ms  "
          f"{verdict}{extra}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--strategies", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--code-size", type=int, default=3000, help="characters of code per step (prompt 2x)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        session, _ = build_session(args.steps, seed=0, code_size=args.code_size)
        sp = Path(tmp) / "big.htam"
        print(f"built a {args.steps}-step session in {time.perf_counter() - t:.1f} s")
        def cold_save():
            forget(session)  # nothing reused: as the first save after loading
            save_session(session, sp)

        wall, cpu = measure(cold_save, args.repeat)
        line(f"session save, cold ({args.steps} steps)", wall, cpu, 0.5, f"   file {sp.stat().st_size / 1e6:.1f} MB")
        wall, cpu = measure(lambda: save_session(session, sp), args.repeat)
        line("session save, per step (reuse)", wall, cpu, 0.5)
        wall, cpu = measure(lambda: load_session(sp), args.repeat)
        line(f"session load ({args.steps} steps)", wall, cpu, 1.0)

        t = time.perf_counter()
        bank = grow(HTG.seed(), random.Random(1), args.strategies, args.records, notes=200)
        c = bank.counts()
        print(f"built a bank of {c['strategies']} strategies, {c['transition_records']} transition records "
              f"in {time.perf_counter() - t:.1f} s")
        bp = Path(tmp) / "memory.htgbank"
        wall, cpu = measure(lambda: save_bank(bank, bp), args.repeat)
        line("bank save", wall, cpu, 0.5, f"   file {bp.stat().st_size / 1e6:.1f} MB")
        wall, cpu = measure(lambda: load_bank(bp), args.repeat)
        line("bank load", wall, cpu, 1.0)

        loaded = load_bank(bp)
        rng = random.Random(2)
        cases = [(random_state(rng), random_history(rng, loaded, rng.randint(0, 12))) for _ in range(200)]
        walls, cpus = [], []
        for state, history in cases:
            w, c = time.perf_counter(), time.process_time()
            select_direction(loaded, state, history, rng=rng)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        for name, times in (("wall", walls), ("cpu", cpus)):
            times.sort()
            med, p95 = statistics.median(times), times[int(0.95 * len(times))]
            print(f"{'direction selection, ' + name:<34} median {med * 1e3:.2f} ms   p95 {p95 * 1e3:.2f} ms   "
                  f"target < 10 ms  {'ok' if p95 < 0.010 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
