"""The event bus: every consumer sees every step-level event; slow ones get coalesced streams."""

import asyncio

from htam_engine.loop.bus import EventBus
from htam_engine.loop.events import (
    CandidateProposed,
    EvaluationProgress,
    StepFinished,
    StepStarted,
    TokensStreamed,
)


async def test_each_consumer_gets_every_event_in_order():
    bus = EventBus()
    bus.bind_loop()
    a, b = bus.subscribe(), bus.subscribe()
    sent = [StepStarted(1), TokensStreamed(1, text="x"), CandidateProposed(1, code="c"), StepFinished(1)]
    for e in sent:
        bus.publish(e)
    bus.close()
    got_a = [e async for e in a]
    got_b = [e async for e in b]
    assert got_a == sent and got_b == sent


async def test_slow_consumer_gets_coalesced_tokens_and_latest_progress_never_loses_step_events():
    bus = EventBus(maxsize=4)
    bus.bind_loop()
    slow = bus.subscribe()
    bus.publish(StepStarted(1))
    for i in range(1000):
        bus.publish(TokensStreamed(1, sample=0, text=str(i % 10)))
    for i in range(50):
        bus.publish(EvaluationProgress(1, sample=0, stage="timing", timings=[float(i)]))
    bus.publish(CandidateProposed(1, sample=0, code="code"))
    bus.publish(StepFinished(1))
    assert slow.pending() <= 8  # bounded: the bound plus a few step-level events
    bus.close()
    got = [e async for e in slow]
    kinds = [e.kind for e in got]
    assert kinds[0] == "step_started" and kinds[-2:] == ["candidate_proposed", "step_finished"]
    text = "".join(e.text for e in got if isinstance(e, TokensStreamed))
    assert text == "".join(str(i % 10) for i in range(1000))  # nothing lost, only merged
    progress = [e for e in got if isinstance(e, EvaluationProgress)]
    assert progress[-1].timings == [49.0]
    assert slow.coalesced > 0


async def test_a_consumer_that_never_reads_does_not_block_the_publisher():
    bus = EventBus(maxsize=2)
    bus.bind_loop()
    bus.subscribe()  # never read
    fast = bus.subscribe(maxsize=10_000)
    for i in range(5000):
        bus.publish(TokensStreamed(1, text="a"))
    bus.close()
    assert len([e async for e in fast]) == 5000


async def test_consumer_waiting_wakes_on_publish_and_ends_on_close():
    bus = EventBus()
    bus.bind_loop()
    sub = bus.subscribe()

    async def reader():
        return [e async for e in sub]

    task = asyncio.create_task(reader())
    await asyncio.sleep(0.01)
    bus.publish(StepStarted(3))
    await asyncio.sleep(0.01)
    bus.close()
    got = await asyncio.wait_for(task, 1)
    assert [e.step for e in got] == [3]


async def test_subscribing_after_close_ends_at_once():
    bus = EventBus()
    bus.close()
    assert [e async for e in bus.subscribe()] == []
