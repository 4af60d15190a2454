"""Synthetic timings for real offline-proposer candidates: a test double of the worker pool.

Nothing is compiled, checked or timed: every candidate comes back correct with a made-up
speedup, so an experiment's search dynamics (which directions the arms pick, how many distinct
candidates they write, whether memory learned on bank problems carries over) can be studied on
a CPU with the real proposer. Figures produced this way say nothing about real kernels; the
experiment report names the evaluator.

speedup = exp(effect(family, template) + noise(problem, code)): effects are drawn once per
(family, template) from a seeded generator, so a template that pays on one problem of a family
tends to pay on the others (what a memory bank can carry); the noise is a fixed function of the
problem and the code, so one candidate always gets one figure.
"""

from __future__ import annotations

import math
import random
import re

from htam_engine.evaluate.cache import sha256_text
from htam_engine.evaluate.result import EvalResult, Status

_TEMPLATE = re.compile(r"\(template ([a-z0-9_]+),")
EFFECT_SD = 0.35
NOISE_SD = 0.1


class SyntheticTimings:
    name = "synthetic timings (test double: no kernel was compiled or timed)"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.evaluated = 0

    def _unit(self, *parts: str) -> random.Random:
        return random.Random(sha256_text(str(self.seed), *parts))

    def speedup(self, problem, code: str) -> float:
        m = _TEMPLATE.search(code[:600])
        template = m.group(1) if m else "code:" + sha256_text(code)[:12]
        effect = self._unit("effect", problem.family.value, template).gauss(0.0, EFFECT_SD)
        noise = self._unit("noise", problem.id, code).gauss(0.0, NOISE_SD)
        return math.exp(effect + noise)

    async def evaluate(self, problem, code, config=None, on_progress=None) -> EvalResult:
        self.evaluated += 1
        s = self.speedup(problem, code)
        return EvalResult(status=Status.OK, correct=True, runtime_ms=1.0 / s, ref_runtime_ms=1.0, speedup_eager=s,
                          device=getattr(config, "device", "cuda"), backend=getattr(config, "backend", "") or "")

    async def close(self) -> None:
        pass
