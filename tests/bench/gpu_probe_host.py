"""What makes a short kernel's forward slow to launch inside htam's sandbox (issue 13: htam timed
`1/88_MinGPTNewGelu` at 0.31 ms where KernelBench timed 0.14 ms; every other export's time sat
0.10-0.17 ms above KernelBench's, the same additive gap). The sandbox trace showed the forward's
host code taking 0.20-0.31 ms in the sandbox against 0.07-0.08 ms back to back in one process,
while the L2 flush ahead of it covers only ~0.08 ms of device time: the rest is the GPU waiting
for the launch, and counted.

Each variant below is the same solution with a few lines put in front of it, evaluated by htam's
judge with the sandbox trace on; they change only the candidate's own process, so no variant
needs a change to the judge:

  as exported   the solution unchanged
  pinned        the sandbox pins itself to one core (a wake-up on another core starts with cold caches)
  no gc         Python's cyclic collector off (a collection inside the forward's host code)
  no guards     the sandbox's after-call guard check replaced by nothing (its walk over the loaded
                modules' namespaces evicts the forward's code and data from the core's caches)
  no poison     the trial's poisoning of freed memory replaced by nothing (its allocations and fills
                run right before the forward)
  all four      pinned, no gc, no guards, no poison
  kb loop       as exported, and on its first call the candidate times its own forward with
                KernelBench's loop (synchronize, flush, events, forward, synchronize; 30 calls back to
                back) inside the sandbox: the sandbox process with the protocol's waits taken away.
                KernelBench's figure here says the waits make the gap; the sandbox's says the process
                itself does (its fork from the zygote, seccomp filter, limits)

Prints, per variant, the median and quartiles of the sandbox-reported trial time and of the
forward's host time (trace), with KernelBench's own figure beside them when HTAM_KERNELBENCH is
set. Run on a CUDA machine from the repository root:

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_probe_host.py SOLUTION.py PROBLEM.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TRIALS = 30

PIN = "import os as _os\n_os.sched_setaffinity(0, {max(_os.sched_getaffinity(0))})\n"
NO_GC = "import gc as _gc\n_gc.disable()\n"
# The harness's module names are spelt in pieces: the static check rejects them whole, before any call.
NO_GUARDS = ("import sys as _sys\n_sandbox = _sys.modules.get('.'.join(['htam' + '_engine', 'evaluate', 'sandbox']))\n"
             "if _sandbox is not None:\n    _sandbox._verify = lambda guards: []\n")
NO_POISON = ("import sys as _sys\n_timing = _sys.modules.get('.'.join(['htam' + '_engine', 'evaluate', 'timing']))\n"
             "if _timing is not None:\n    _timing.poison = lambda *args: None\n")
VARIANTS = {"as exported": "", "pinned": PIN, "no gc": NO_GC, "no guards": NO_GUARDS, "no poison": NO_POISON,
            "all four": PIN + NO_GC + NO_GUARDS + NO_POISON, "kb loop": ""}
# Appended to the solution for "kb loop": KernelBench's timing loop (its clear_l2_cache included) run
# once inside the sandbox on the first call's inputs; the median after 3 warm-ups goes to TRACE.kbloop.
KB_LOOP = """
import os as _kb_os, statistics as _kb_st
import torch as _kb_torch
_kb_forward, _kb_done = ModelNew.forward, []


def _kb_timed(self, *args):
    if not _kb_done and _kb_torch.cuda.is_available():
        _kb_done.append(True)
        ms = []
        for _ in range(33):
            _kb_torch.cuda.synchronize()
            start, end = _kb_torch.cuda.Event(enable_timing=True), _kb_torch.cuda.Event(enable_timing=True)
            dummy = _kb_torch.empty((32, 1024, 1024), dtype=_kb_torch.int64, device="cuda")
            dummy.fill_(42)
            del dummy
            start.record()
            _kb_forward(self, *args)
            end.record()
            _kb_torch.cuda.synchronize()
            ms.append(start.elapsed_time(end))
        with open((_kb_os.environ.get("HTAM_SANDBOX_TRACE") or "/tmp/htam-trace") + ".kbloop", "a") as f:
            f.write(f"{_kb_st.median(ms[3:])}\\n")
    return _kb_forward(self, *args)


ModelNew.forward = _kb_timed
"""
SUFFIXES = {"kb loop": KB_LOOP}
PHASES = ("seed", "before_forward", "forward_host", "trial", "deliver", "decoy", "reused", "verify")


def quartiles(xs: list[float]) -> str:
    if len(xs) < 2:
        return "n/a"
    q = statistics.quantiles(xs, n=4)
    return f"median {statistics.median(xs):7.4f}  q1 {q[0]:7.4f}  q3 {q[2]:7.4f}"


def with_prefix(code: str, prefix: str) -> str:
    """`prefix` after the solution's `from __future__` imports (which must stay first)."""
    lines = code.splitlines(keepends=True)
    at = max((i + 1 for i, line in enumerate(lines) if line.startswith("from __future__")), default=0)
    return "".join(lines[:at]) + prefix + "".join(lines[at:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("solution")
    ap.add_argument("problem")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names from the list above")
    a = ap.parse_args()
    from htam_engine.evaluate import evaluate
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.problems.loader import load_problem
    from htam_engine.settings import SANDBOX_TRACE_ENV

    code = Path(a.solution).read_text()
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: a dry run of the variants
    problem = load_problem(a.problem, device=device)
    trace = Path(os.environ.get("OUT", "/tmp")) / "host_probe_trace.jsonl"
    os.environ[SANDBOX_TRACE_ENV] = str(trace)  # the judge and its sandboxes inherit it
    print(f"{a.problem}: {TRIALS} timed trials per variant (sandbox-reported ms; forward's host ms from the trace)")
    for name in a.variants.split(","):
        trace.unlink(missing_ok=True)
        kb_loop = Path(str(trace) + ".kbloop")
        kb_loop.unlink(missing_ok=True)
        r = evaluate(problem, with_prefix(code, VARIANTS[name]) + SUFFIXES.get(name, ""),
                     EvalConfig(device=device, trials=TRIALS, time_compile_baseline=False))
        if kb_loop.exists():
            print(f"  {name:12s} KernelBench's loop inside the sandbox: median {kb_loop.read_text().split()[0]} ms",
                  flush=True)
        rows = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
        # the timed trials: the candidate's last calls but the work check's two (kernels skipped, raising)
        cand = [x for x in rows if x["role"] == "candidate" and x["model"] == "main"][-TRIALS - 2:-2]
        ref = [x for x in rows if x["role"] == "reference" and x["model"] == "eager"][-TRIALS:]
        print(f"  {name:12s} verdict {r.status.value}; ModelNew trial {quartiles([x['trial_ms'] for x in cand])}; "
              f"host {quartiles([x['phases_ms'].get('forward_host', 0.0) for x in cand])}", flush=True)
        print(f"  {'':12s} Model trial {quartiles([x['trial_ms'] for x in ref])}; "
              f"host {quartiles([x['phases_ms'].get('forward_host', 0.0) for x in ref])}", flush=True)
        print(f"  {'':12s} ModelNew phases (median ms): " + ", ".join(
            f"{p} {statistics.median([x['phases_ms'].get(p, 0.0) for x in cand]):.3f}" for p in PHASES)
            if cand else "", flush=True)
        if r.integrity:
            print(f"  {'':12s} findings: {sorted({f.rule for f in r.integrity})}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
