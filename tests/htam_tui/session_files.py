"""Session files for the app's tests, written without running anything: steps with fixed
directions (the scripted engine's) and fixed results on the loopback tests' problem, so a
real engine can resume them and the pictures do not change run to run."""

from __future__ import annotations

from pathlib import Path

from engine_double import CODE_V1, _retrieval, _selection, compile_error, ok_result
from loopback_support import PROBLEM_PATH

from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory import HTG
from htam_engine.memory.types import State
from htam_engine.session import new_session, record_step, save_session
from htam_engine.session.model import Candidate, Decision, SessionConfig, StepRecord


def write_session(path: Path, speedups: list[float | None], *, name: str | None = None, steps: int | None = None,
                  backend: str = "triton", policy: str = "auto") -> Path:
    """A finished-looking session: one step per entry (a speedup: correct at that speed; None:
    a compile error), planned for `steps` (default: as many as it has)."""
    from htam_engine.problems import load_problem

    problem = load_problem(str(PROBLEM_PATH))
    config = SessionConfig(backend=backend, device="cpu", proposer="model", policy=policy,
                           steps=len(speedups) if steps is None else steps)
    session = new_session(problem, config, HTG.seed())
    if name:
        session.id = name
    state = State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", Backend(backend))
    for k, speedup in enumerate(speedups, start=1):
        result = ok_result(speedup) if speedup is not None else compile_error()
        code = CODE_V1.replace("scalar loop", f"step {k}")
        cand = Candidate(0, code, decision=Decision("approve", "person"), result=result)
        record_step(session, StepRecord(k, state, _selection(k), _retrieval(_selection(k).direction), [cand],
                                        chosen=0, reward=0.2))
    save_session(session, path)
    return path
