"""What the judge's timed rounds cost on the CPU: one honest C++ candidate of the relu problem
(the adversarial suite's `honest_relu_cpp`) evaluated by an in-process judge with 100 timed
trials and its eager baseline, twice after a warm-up; prints each evaluation's timed-rounds,
checks and total seconds. The timed rounds hold a GPU's exclusive timing lock, so their cost
bounds a worker pool's throughput (issue 13). From the repository root:

    python3 tests/bench/cpu_timed_rounds.py [--trials 100] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "htam_engine" / "evaluate"
sys.path.insert(0, str(SUITE.parents[2]))
sys.path.insert(0, str(SUITE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    from cheats.harness import close_judges, run_check

    run_check("relu", "honest_relu_cpp", trials=10)  # the build, the judge's and the sandboxes' start
    for i in range(a.repeat):
        t0 = time.perf_counter()
        r = run_check("relu", "honest_relu_cpp", trials=a.trials)
        print(f"evaluation {i + 1}: {r.status.value}; timed rounds {r.stages.time_s:.3f} s ({a.trials} trials), "
              f"checks {r.stages.check_s:.3f} s, total {time.perf_counter() - t0:.3f} s", flush=True)
    close_judges()
    return 0


if __name__ == "__main__":
    sys.exit(main())
