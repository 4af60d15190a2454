"""Headless progress lines and the terminal approval prompt of `htam run`."""

from __future__ import annotations

import asyncio
import io

from loop_support import fast_eval

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.loop import console
from htam_engine.loop import events as ev
from htam_engine.loop.engine import Engine
from htam_engine.session.model import Decision, SessionConfig


def test_event_lines_say_what_happened():
    ok = EvalResult(Status.OK, correct=True, speedup_eager=2.5, speedup_compile=1.25, runtime_ms=0.5)
    assert "2.50x vs eager, 1.25x vs torch.compile" in console.event_line(ev.EvaluationFinished(1, result=ok), 3)
    bad = EvalResult.failure(Status.COMPILE_ERROR, "expected ';' at line 3")
    assert console.event_line(ev.EvaluationFinished(2, result=bad), 3) == "  sample 0: compile_error: expected ';' at line 3"
    assert console.event_line(ev.DecisionMade(1, decision=Decision("approve", "auto")), 3) is None
    assert "veto by person: slow" in console.event_line(ev.DecisionMade(1, decision=Decision("veto", "person", "slow")), 3)
    assert console.event_line(ev.TokensStreamed(1, text="x"), 3) is None
    out = io.StringIO()
    console.LineReporter(out).handle(ev.StepStarted(2), 5)
    assert out.getvalue() == "step 2/5\n"


async def test_terminal_prompt_vetoes_approves_and_approves_all(problem, model_proposer, pool, tmp_path, monkeypatch):
    answers = iter(["?", "v", "needs vector loads", "a", "A"])
    monkeypatch.setattr(console, "_read", lambda prompt: next(answers))
    engine = Engine(problem, SessionConfig(backend="triton", steps=4, policy="ask"), proposer=model_proposer,
                    pool=pool, session_path=tmp_path / "t.htam", eval_config=fast_eval(), interactive=True)
    err = io.StringIO()
    follower = asyncio.create_task(console.follow(engine, engine.events(), console.LineReporter(err),
                                                  console.TerminalPrompter(engine, out=err)))
    session = await engine.run()
    await follower
    d1, d2, d3, d4 = (r.candidates[0].decision for r in session.steps)
    assert (d1.action, d1.reason, d1.by) == ("veto", "needs vector loads", "person")
    assert d2.action == "approve" and d2.by == "person"
    # approve all, as in the app: this one is the person's, the later ones the policy's
    assert (d3.action, d3.by, d4.action, d4.by) == ("approve", "person", "approve", "auto")
    assert "step 1, sample 0: candidate" in err.getvalue()
