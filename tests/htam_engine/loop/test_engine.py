"""Full engine sessions against the loopback model server and a real worker pool."""

from __future__ import annotations

import asyncio

import pytest
from loop_support import NO_KERNEL, TRITON_CODE, fast_eval, reply

from htam_engine.errors import UsageError
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


async def test_token_budget_stops_the_loop(problem, model_proposer, pool, tmp_path):
    # each reply reports 400 + 100 tokens
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=5, token_budget=900)
    session, events = await run_collecting(engine)
    assert len(session.steps) == 2 and engine.finish_reason == "tokens"
    assert session.usage.prompt_tokens + session.usage.completion_tokens == 1000
    assert events[-1].kind == "session_finished" and events[-1].reason == "tokens"


async def test_cost_budget_stops_the_loop(problem, model_proposer, pool, tmp_path):
    # 500 tokens at $1000 per 1M tokens = $0.50 a step
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=5, cost_budget=1.2)
    session, _ = await run_collecting(engine)
    assert len(session.steps) == 3 and engine.finish_reason == "cost"
    assert abs(session.usage.cost_usd - 1.5) < 1e-6


async def test_target_speedup_stops_after_a_correct_kernel(problem, model_proposer, pool, server, tmp_path):
    server.add(reply(TRITON_CODE))
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=4, target_speedup=1e-6)
    session, events = await run_collecting(engine)
    verdicts = [(c.result.status, c.result.diagnostics.message) for st in session.steps for c in st.candidates
                if c.result is not None]
    assert engine.finish_reason == "target" and len(session.steps) == 1, verdicts
    assert session.best_result is not None and session.best_result.ok and session.best_step == 1
    kinds = [e.kind for e in events]
    assert kinds.index("evaluation_finished") < kinds.index("memory_updated") < kinds.index("session_saved")


async def test_approve_veto_edit_skip_each_change_the_session(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=4, policy="ask", interactive=True)
    plan = {
        1: Decision("veto", by="person", reason="no torch fallbacks please"),
        2: Decision("edit", by="person", edited_code=TRITON_CODE),
        3: Decision("skip", by="person"),
        4: Decision("approve", by="person"),
    }
    sub = engine.events()

    async def person():
        async for e in sub:
            if isinstance(e, ev.ApprovalRequested):
                assert e.request.step == e.step and e.pending == (e.request,)
                e.request.resolve(plan[e.step])

    front = asyncio.create_task(person())
    session = await engine.run()
    await front
    s1, s2, s3, s4 = session.steps
    # veto: not evaluated, counted as a failure in memory with the reason as a note
    c1 = s1.candidates[0]
    assert c1.decision.action == "veto" and c1.result is None and s1.reward < 0
    notes = [n for _, _, n in s1.memory_delta["notes"]]
    assert any(n["why"] == "no torch fallbacks please" and n["source"] == "veto" for n in notes)
    edge = engine.htg.notes(s1.memory_delta["transitions"][0][0], s1.selection.direction)
    assert any(n.why == "no torch fallbacks please" for n in edge)
    # ... and it reaches the next prompts
    assert model_proposer.requests[1].veto_reasons == ["no torch fallbacks please"]
    # edit: the person's code is what was evaluated and became the best
    c2 = s2.candidates[0]
    assert "no torch fallbacks please" in c2.prompt
    assert c2.decision.edited_code == TRITON_CODE and c2.result.ok
    assert session.best_code == TRITON_CODE and session.best_step == 2
    # skip: not evaluated, nothing learned
    c3 = s3.candidates[0]
    assert c3.decision.action == "skip" and c3.result is None and s3.chosen is None and s3.memory_delta == {}
    # approve: evaluated as proposed (the static checks reject it)
    c4 = s4.candidates[0]
    assert c4.decision.by == "person" and c4.result.status.value == "rejected"
    assert [d.action for d in (c1.decision, c2.decision, c3.decision, c4.decision)] == ["veto", "edit", "skip", "approve"]


async def test_headless_auto_static_vetoes_what_the_static_checks_block(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=1, policy="auto-static")
    session, _ = await run_collecting(engine)
    d = session.steps[0].candidates[0].decision
    assert d.action == "veto" and d.by == "auto-static" and "static checks" in d.reason


async def test_interrupted_mid_step_then_resumed_ends_with_every_step(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=4, policy="ask", interactive=True)
    sub = engine.events()
    task = asyncio.create_task(engine.run())
    async for e in sub:
        if isinstance(e, ev.ApprovalRequested):
            if e.step == 3:
                task.cancel()  # the process dies while step 3 waits
                break
            e.request.approve()
    try:
        await task
    except asyncio.CancelledError:
        pass
    saved = load_session(tmp_path / "s.htam")
    assert [r.step for r in saved.steps] == [1, 2]
    resumed = Engine(problem, session=saved, proposer=model_proposer, pool=pool,
                     session_path=tmp_path / "s.htam", eval_config=fast_eval(), policy="auto")
    session = await resumed.run()
    assert [r.step for r in session.steps] == [1, 2, 3, 4]
    assert [r.step for r in load_session(tmp_path / "s.htam").steps] == [1, 2, 3, 4]
    # --steps on resume: that many more
    more = Engine(problem, session=load_session(tmp_path / "s.htam"), proposer=model_proposer, pool=pool,
                  session_path=tmp_path / "s.htam", eval_config=fast_eval(), steps=1)
    assert len((await more.run()).steps) == 5


async def test_same_seed_gives_the_same_directions(problem, model_proposer, pool, tmp_path):
    from htam_engine.memory import SelectConfig

    def directions(seed, name):
        engine = Engine(problem, SessionConfig(backend="triton", steps=4, seed=seed), proposer=model_proposer,
                        pool=pool, session_path=tmp_path / name, eval_config=fast_eval(),
                        select_config=SelectConfig(temperature=1.0))
        return engine

    runs = []
    for seed, name in ((11, "a.htam"), (11, "b.htam"), (12, "c.htam")):
        session = await directions(seed, name).run()
        runs.append([r.selection.direction for r in session.steps])
    assert runs[0] == runs[1] and len(runs[0]) == 4
    assert all(r.selection.mode == "sample" for r in load_session(tmp_path / "a.htam").steps)


async def test_stop_during_approval_finishes_cleanly(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=5, policy="ask", interactive=True)
    sub = engine.events()
    task = asyncio.create_task(engine.run())
    async for e in sub:
        if isinstance(e, ev.ApprovalRequested):
            engine.stop()
    session = await task
    assert engine.finish_reason == "stopped" and len(session.steps) == 1
    assert session.steps[0].candidates[0].decision.action == "skip"


async def test_pause_holds_the_next_step_until_resume(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=2)
    engine.pause()
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.3)
    assert not task.done() and len(engine.session.steps) == 0
    engine.resume()
    session = await asyncio.wait_for(task, 60)
    assert len(session.steps) == 2


async def test_chosen_direction_policy_switch_and_reevaluate(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=1)
    target = engine.htg.directions()[-1]
    engine.choose_direction(target)
    engine.set_policy("auto-static")
    session = await engine.run()
    assert session.steps[0].selection.direction == target and session.steps[0].selection.mode == "forced"
    assert engine.policy == "auto-static"
    with pytest.raises(UsageError, match="no best candidate"):  # the only candidate was rejected
        await engine.reevaluate()


async def test_a_harness_fault_fails_the_sample_and_the_session_goes_on(problem, model_proposer, tmp_path, server):
    from htam_engine.evaluate.pool import WorkerPool

    closed = WorkerPool(1, "cpu")
    await closed.close()  # evaluating on it raises
    server.add(reply(TRITON_CODE), reply(TRITON_CODE))
    engine = make_engine(problem, model_proposer, closed, tmp_path, steps=2)
    session, events = await run_collecting(engine)
    assert len(session.steps) == 2
    assert any(e.kind == "error" and e.where == "evaluate" for e in events)
    assert session.steps[0].candidates[0].result.status.value == "harness_error"  # not the candidate's fault


async def test_samples_of_a_step_are_generated_and_evaluated_together(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=1, samples=3)
    session, events = await run_collecting(engine)
    assert len(session.steps[0].candidates) == 3
    assert {e.sample for e in events if e.kind == "evaluation_finished"} == {0, 1, 2}
    assert len({r.seed for r in model_proposer.requests}) == 3


async def test_ablations_remove_their_component(problem, model_proposer, pool, tmp_path):
    from htam_engine.memory import HTG

    fb = make_engine(problem, model_proposer, pool, tmp_path / "fb", steps=1, ablation="feedback-only")
    await fb.run()
    req = model_proposer.requests[-1]
    assert req.selection.direction == "" and req.retrieval.strategies == [] and req.retrieval.notes == []

    bon = make_engine(problem, model_proposer, pool, tmp_path / "bon", steps=2, samples=2, ablation="best-of-n")
    session = await bon.run()
    assert len(session.steps) == 1 and len(session.steps[0].candidates) == 4

    seed = HTG.seed()
    nu = make_engine(problem, model_proposer, pool, tmp_path / "nu", steps=2, ablation="no-update", htg=seed.copy())
    session = await nu.run()
    assert nu.htg == seed and all(not r.memory_delta.get("transitions") for r in session.steps)
    assert all(r.reward < 0 for r in session.steps)  # the reward is still computed and recorded

    flat = make_engine(problem, model_proposer, pool, tmp_path / "flat", steps=1, ablation="flat")
    session = await flat.run()
    assert session.steps[0].selection.ablation == "flat"


async def test_a_consumer_that_never_reads_does_not_hold_the_engine(problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=3)
    stuck = engine.events(maxsize=2)  # never read
    session = await asyncio.wait_for(engine.run(), 60)
    assert len(session.steps) == 3
    kinds = [e.kind async for e in stuck]  # the run is over: what it holds, then the end
    assert kinds.count("step_finished") == 3 and kinds.count("session_saved") >= 3  # none dropped


async def test_offline_proposer_session_finds_a_correct_kernel(pool, tmp_path):
    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import OfflineProposer

    problem = load_problem("relu", {"batch_size": 4, "dim": 1024})
    engine = Engine(problem, SessionConfig(backend="triton", steps=2, samples=2, proposer="offline"),
                    proposer=OfflineProposer(), pool=pool, session_path=tmp_path / "off.htam", eval_config=fast_eval())
    session, events = await run_collecting(engine)
    assert len(session.steps) == 2 and all(len(r.candidates) == 2 for r in session.steps)
    assert session.best_result is not None and session.best_result.ok
    assert all(c.template for r in session.steps for c in r.candidates if c.code)
    assert [e.kind for e in events].count("direction_selected") == 2
    assert len(load_session(tmp_path / "off.htam").steps) == 2


async def test_a_fault_inside_a_step_becomes_a_failed_step_and_the_session_goes_on(
        problem, model_proposer, pool, tmp_path, monkeypatch):
    import htam_engine.loop.engine as engine_mod

    real = engine_mod.retrieve
    calls = {"n": 0}

    def flaky_retrieve(*a, **kw):  # the memory fails once (a corrupt bank, say)
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("strategy table unreadable")
        return real(*a, **kw)

    monkeypatch.setattr(engine_mod, "retrieve", flaky_retrieve)
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=2)
    session, events = await run_collecting(engine)
    assert [r.step for r in session.steps] == [1, 2]
    assert session.steps[0].candidates == [] and "strategy table unreadable" in session.steps[0].selection.reason
    assert session.steps[1].candidates[0].result is not None
    errors = [e for e in events if e.kind == "error"]
    assert errors and errors[0].step == 1 and errors[0].where == "step"


async def test_a_proposer_that_raises_fails_only_its_sample(problem, pool, tmp_path):
    class Broken:  # test double: a proposer with a bug
        name = "broken"

        async def propose(self, request, on_token=None):
            raise ValueError("template table missing")

        async def reflect(self, request, code, result):
            return None

    engine = make_engine(problem, Broken(), pool, tmp_path, steps=2)
    session, events = await run_collecting(engine)
    assert len(session.steps) == 2
    c = session.steps[0].candidates[0]
    assert c.code is None and "template table missing" in c.failure and session.steps[0].reward < 0


async def test_a_saved_session_replays_the_step_events_the_live_stream_showed(
        problem, model_proposer, pool, server, tmp_path):
    from htam_engine.loop.replay import REPLAYED, session_events

    server.add(reply(NO_KERNEL), reply(TRITON_CODE), reply(NO_KERNEL))
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=3, policy="ask", interactive=True)
    sub = engine.events()
    task = asyncio.create_task(engine.run())
    live = []
    async for e in sub:
        live.append(e)
        if isinstance(e, ev.ApprovalRequested):
            {1: lambda r: r.veto("r"), 2: lambda r: r.approve(), 3: lambda r: r.skip()}[e.step](e.request)
    await task
    replayed = session_events(load_session(tmp_path / "s.htam"))
    shown = [e for e in live if isinstance(e, REPLAYED)]
    assert [e.kind for e in replayed] == [e.kind for e in shown]
    assert replayed == shown


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without a CUDA toolchain")
async def test_an_environment_fault_never_counts_against_a_strategy(pool, tmp_path):
    """CUDA kernels evaluated on a machine without CUDA (the engine built directly, past the
    command line's refusal): the build fails for want of a toolchain, the judge calls that the
    harness's error, and the memory learns nothing from it."""
    from htam_engine.memory import HTG
    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import OfflineProposer

    problem = load_problem("relu", {"batch_size": 4, "dim": 1024})
    engine = Engine(problem, SessionConfig(backend="cuda", device="cpu", steps=1, proposer="offline"),
                    proposer=OfflineProposer(), pool=pool, htg=HTG.seed(), session_path=tmp_path / "e.htam")
    session, events = await run_collecting(engine)
    assert session.steps[0].candidates[0].result.status.value == "harness_error"
    assert session.steps[0].memory_delta == {} and engine.htg == HTG.seed()
    assert [e.where for e in events if e.kind == "error"] == ["environment"]


async def test_approve_all_records_the_waiting_ones_as_the_persons_and_later_ones_as_auto(
        problem, model_proposer, pool, tmp_path):
    engine = make_engine(problem, model_proposer, pool, tmp_path, steps=2, samples=2, policy="ask", interactive=True)
    sub = engine.events()

    async def person():
        async for e in sub:
            if isinstance(e, ev.ApprovalRequested) and len(e.pending) == 2:
                engine.approve_all()  # as the app's A and the terminal prompt's A both do

    front = asyncio.create_task(person())
    session = await engine.run()
    await front
    by = [[c.decision.by.value for c in r.candidates] for r in session.steps]
    assert by == [["person", "person"], ["auto", "auto"]] and engine.policy == "auto"
