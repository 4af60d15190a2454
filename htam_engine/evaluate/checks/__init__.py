"""Correctness and integrity checks for candidate kernels.

Two places, two jobs:

- In the engine, before anything compiles: `static_findings(code, backend)` reads the source.
  Findings with severity "reject" end the evaluation early with a clear reason (patching
  timers, walking frames, importing the harness, no kernel, no ModelNew); "warn" ones are
  reported only. A hint, not the defence: a determined cheat hides from any text scan.
- In the judge, on what a sandbox returned (sequence.py, observe.py): the checked calls, every
  comparison, precision against float64, the stale-output, mutation, aliasing, density and
  work checks. The judge never runs candidate code; these are the line of defence.

Inside a sandbox, guards.py gives cheap early findings the judge passes on (a patched clock,
a thread left running), and memory.py poisons freed memory before every call.
"""

from htam_engine.evaluate.checks.static import static_findings

__all__ = ["static_findings"]
