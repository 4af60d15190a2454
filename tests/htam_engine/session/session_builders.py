"""Builds sessions the way the loop does (real memory selection, retrieval and update),
with evaluation results drawn from a seeded rng instead of compiling kernels."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from htam_engine.evaluate.result import CompilerMessage, Diagnostics, EvalResult, Mismatch, Status
from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory import HTG, make_state, retrieve, select_direction, update
from htam_engine.problems.model import Problem, TensorSpec
from htam_engine.propose.base import Usage
from htam_engine.session import (
    Candidate, Decision, Session, SessionConfig, StepRecord, history_of, new_session, record_step,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
from htg_builders import grow  # noqa: E402,F401  (random memories, shared with the memory tests)

PROBLEM_SRC = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(4096, 1024)]

def get_init_inputs():
    return []
'''

KERNEL = "import torch\nfrom torch.utils.cpp_extension import load_inline\n\nclass ModelNew(torch.nn.Module):\n" + \
    "    def forward(self, x):\n        return ext.fused(x)\n"


def problem() -> Problem:
    return Problem(id="builtin:relu_scale", name="relu_scale", source=PROBLEM_SRC, path=None, level=1,
                   family=Family.ELEMENTWISE, inputs=[TensorSpec([4096, 1024], "float32")])


def _result(rng: random.Random) -> EvalResult:
    roll = rng.random()
    if roll < 0.15:
        return EvalResult.failure(Status.COMPILE_ERROR, "error: identifier undefined", backend="cpp",
                                  diagnostics=Diagnostics(compiler=[CompilerMessage("undefined 'x'", "main.cpp", 12, 3)]))
    if roll < 0.25:
        return EvalResult(status=Status.INCORRECT, diagnostics=Diagnostics(
            mismatch=Mismatch(0.5, 0.9, [3, 7], [4096, 1024], [4096, 1024], "float32", "float32", "get_inputs#1")))
    sp = rng.uniform(0.5, 3.0)
    return EvalResult(status=Status.OK, correct=True, runtime_ms=1.0 / sp, ref_runtime_ms=1.0, speedup_eager=sp,
                      speedup_compile=sp * 0.8, timings=[1.0 / sp + rng.random() * 1e-3 for _ in range(30)],
                      device="cpu", backend="cpp")


def add_steps(session: Session, htg: HTG, n: int, rng: random.Random, *, code_size: int = 600,
              samples: int = 1, path=None, vetoes: float = 0.0) -> None:
    """Append n steps driven by the real memory; save after each when path is given."""
    for _ in range(n):
        step = len(session.steps) + 1
        best = session.best_result
        status = "start" if not session.steps else (session.steps[-1].outcome.result.status
                                                    if session.steps[-1].outcome.result else "failed")
        state = make_state(status, Family.ELEMENTWISE, Backend.CPP, Bottleneck.MEMORY,
                           best.speedup_eager if best else None)
        history = history_of(session)
        sel = select_direction(htg, state, history, rng=rng)
        ret = retrieve(htg, sel.direction, state, k=3, selection=sel)
        cands = []
        for k in range(samples):
            veto = rng.random() < vetoes
            code = KERNEL + "#" + "x" * code_size + f"\n# step {step} sample {k}\n"
            cands.append(Candidate(sample=k, code=code, prompt="p" * (code_size * 2), model_output="o" * code_size,
                                   template=ret.strategies[0].template,
                                   decision=Decision("veto" if veto else "approve", "person" if veto else "auto",
                                                     reason="too risky" if veto else ""),
                                   result=None if veto else _result(rng),
                                   usage=Usage(100, 50, 0.001)))
        out = cands[0]
        r = out.result
        delta = update(htg, history=history, state=state, direction=sel.direction,
                       strategies=[v.id for v in ret.strategies], status=r.status if r else "vetoed",
                       prev_speedup=best.speedup_eager if best else None,
                       new_speedup=r.speedup_eager if r else None, family=Family.ELEMENTWISE, backend=Backend.CPP,
                       veto_reason=out.decision.reason if r is None else None, session_id=session.id, step=step,
                       now=1_000_000.0 + step)
        rec = StepRecord(step=step, state=state, selection=sel, retrieval=ret, candidates=cands, chosen=0,
                         reward=delta["reward"], started_at=float(step), finished_at=step + 0.5, memory_delta=delta)
        record_step(session, rec, path)


def build_session(n_steps: int, seed: int = 0, htg: HTG | None = None, **kw) -> tuple[Session, HTG]:
    """A session of n steps and the live memory after them."""
    mem = htg or HTG.seed()
    s = new_session(problem(), SessionConfig(seed=seed), mem)
    add_steps(s, mem, n_steps, random.Random(seed), **kw)
    return s, mem
