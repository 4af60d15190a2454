"""Full engine sessions against the loopback model server and a real worker pool."""

from __future__ import annotations

import asyncio

from loop_support import NO_KERNEL, TRITON_CODE, fast_eval, reply

from htam_engine.loop import events as ev
from htam_engine.loop.engine import Engine
from htam_engine.session import load_session
from htam_engine.session.model import Decision, SessionConfig


def make_engine(problem, proposer, pool, tmp_path, **kw):
    cfg_kw = {k: kw.pop(k) for k in list(kw) if k in SessionConfig.__slots__}
    config = SessionConfig(backend="triton", device="cpu", proposer="model", **cfg_kw)
    return Engine(problem, config, proposer=proposer, pool=pool, session_path=tmp_path / "s.htam",
                  eval_config=fast_eval(), **kw)


async def run_collecting(engine):
    sub = engine.events()
    session = await engine.run()
    return session, [e async for e in sub]


async def test_step_budget_stops_and_every_step_is_saved_before_the_next(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=3)
    seen_on_disk = []
    sub = engine.events()

    async def watch():
        async for e in sub:
            if isinstance(e, ev.SessionSaved):
                seen_on_disk.append((e.steps_saved, len(load_session(e.path).steps)))
            if isinstance(e, ev.StepStarted) and e.step > 1:
                # the previous step is on disk before this one begins
                seen_on_disk.append(("start", e.step, len(load_session(tmp_path / "s.htam").steps)))

    watcher = asyncio.create_task(watch())
    session = await engine.run()
    await watcher
    assert [r.step for r in session.steps] == [1, 2, 3]
    assert engine.finish_reason == "steps"
    assert (1, 1) in seen_on_disk and (3, 3) in seen_on_disk
    assert ("start", 2, 1) in seen_on_disk and ("start", 3, 2) in seen_on_disk
    assert all(r.outcome.result.status.value == "rejected" for r in session.steps)
    assert len(load_session(tmp_path / "s.htam").steps) == 3
