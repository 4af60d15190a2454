"""Suite metrics: correctness, fast_p against both baselines, geomeans with failures as 1.0."""

import math

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.loop.metrics import problem_row, suite_metrics
from htam_engine.memory.types import Retrieval, Selection, State
from htam_engine.propose.base import Usage
from htam_engine.session.model import Candidate, ProblemRef, Session, SessionConfig, StepRecord


def _session(pid: str, level: int, result: EvalResult, tokens: int = 100, cost: float = 0.01) -> Session:
    state = State("start", Family.ELEMENTWISE, Bottleneck.MEMORY, "none", Backend.CPP)
    step = StepRecord(step=1, state=state, selection=Selection("fusion", [], "argmax"),
                      retrieval=Retrieval("fusion", [], []), candidates=[Candidate(0, "code", result=result)],
                      chosen=0, started_at=10.0, finished_at=12.5)
    s = Session(id=pid, problem=ProblemRef(pid, "src"), config=SessionConfig(extra={"level": level}),
                memory_initial={}, steps=[step], usage=Usage(tokens, 0, cost))
    if result.ok:
        s.best_result, s.best_code, s.best_step = result, "code", 1
    return s


def ok(eager: float, compile_: float | None) -> EvalResult:
    return EvalResult(Status.OK, correct=True, speedup_eager=eager, speedup_compile=compile_, runtime_ms=1.0)


def test_rows_and_suite_metrics():
    sessions = [
        _session("a", 1, ok(2.0, 1.2)),
        _session("b", 1, ok(0.5, None)),
        _session("c", 2, EvalResult.failure(Status.COMPILE_ERROR, "boom")),
        _session("d", 2, ok(4.0, 3.0)),
    ]
    rows = [problem_row(s) for s in sessions]
    assert [r["status"] for r in rows] == ["ok", "ok", "compile_error", "ok"]
    assert rows[2]["correct"] is False and rows[2]["speedup_eager"] is None
    assert rows[0]["wall_s"] == 2.5 and rows[0]["tokens"] == 100
    m = suite_metrics(rows)
    assert m["correctness_rate"] == 0.75
    assert m["fast_p_eager"] == {"fast_0": 0.75, "fast_1": 0.5, "fast_1.5": 0.5, "fast_2": 0.25}
    # no torch.compile baseline for b: it counts as not faster for p > 0
    assert m["fast_p_compile"] == {"fast_0": 0.75, "fast_1": 0.5, "fast_1.5": 0.25, "fast_2": 0.25}
    assert math.isclose(m["geomean_speedup_eager"], (2.0 * 0.5 * 1.0 * 4.0) ** 0.25)
    assert math.isclose(m["geomean_correct_eager"], (2.0 * 0.5 * 4.0) ** (1 / 3))
    assert math.isclose(m["geomean_speedup_compile"], (1.2 * 1.0 * 3.0) ** (1 / 3))
    assert math.isclose(m["per_level"]["2"]["geomean_speedup_eager"], 2.0)
    assert m["missing_compile_baseline"] == 1
    assert math.isclose(m["cost_per_problem_usd"], 0.01)


def test_empty_suite_has_no_numbers():
    m = suite_metrics([])
    assert m["problems"] == 0 and m["correctness_rate"] is None and m["geomean_speedup_eager"] is None
