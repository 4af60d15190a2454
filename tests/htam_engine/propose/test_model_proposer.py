"""The model proposer against a real HTTP server speaking the OpenAI protocol, with the real client."""

from __future__ import annotations

import asyncio
import time

import pytest

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.propose import make_proposer
from htam_engine.propose.model import ModelProposer
from tests.support.loopback_server import Reply


async def test_correct_candidate_streams_tokens_and_records_usage(loopback, model_config, kit):
    loopback.add(Reply(kit.fenced(kit.GOOD_CODE), prompt_tokens=1200, completion_tokens=300))
    model_config.model.model = "gpt-4o"  # a priced model: 1200 in, 300 out
    proposer = make_proposer("model", model_config)
    tokens: list[str] = []
    proposal = await proposer.propose(kit.make_request(), tokens.append)
    assert proposal.code == kit.GOOD_CODE
    assert proposal.failure == ""
    assert len(tokens) > 5 and "".join(tokens) == proposal.raw_output
    assert (proposal.usage.prompt_tokens, proposal.usage.completion_tokens) == (1200, 300)
    assert proposal.usage.cost_usd == pytest.approx((1200 * 2.5 + 300 * 10.0) / 1e6)
    assert proposal.model == "gpt-4o"
    sent = loopback.chat_requests()[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert "class Model(nn.Module)" in sent["messages"][1]["content"]
    assert proposal.prompt.endswith(sent["messages"][1]["content"])


async def test_async_token_sink_and_slow_stream(loopback, model_config, kit):
    loopback.add(Reply(kit.fenced(kit.GOOD_CODE), chunk_chars=40, chunk_delay_s=0.02))
    got: list[str] = []

    async def sink(piece: str) -> None:
        got.append(piece)

    proposal = await ModelProposer(model_config.model).propose(kit.make_request(), sink)
    assert proposal.code == kit.GOOD_CODE and len(got) >= 5


async def test_broken_candidate_is_a_step_failure_with_a_reason(loopback, model_config, kit):
    loopback.add(Reply("I would use a faster kernel, but here is only an idea.\n```cpp\n__global__ void k() {}\n```\n"))
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code is None
    assert "ModelNew" in proposal.failure and "cpp" in proposal.failure
    assert proposal.raw_output.startswith("I would use")


async def test_reply_cut_by_the_token_limit_says_so(loopback, model_config, kit):
    loopback.add(Reply("```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return (x", finish_reason="length"))
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code is None
    assert "cut off" in proposal.failure and "token limit" in proposal.failure


@pytest.mark.parametrize(
    "fault, kind",
    [
        (Reply(status=500), "server"),
        (Reply(status=503), "server"),
        (Reply(status=429, retry_after=0.05), "rate_limit"),
        (Reply("```python\nimport torch\n" * 20, cut_after=60), "stream_cut"),
        (Reply("```python\nimport torch\n" * 20, malformed=True), "malformed"),
        (Reply("```python\nimport torch\n" * 20, stall_after=30, stall_s=5), "timeout"),
        (Reply("late", delay_s=5), "timeout"),
    ],
    ids=["500", "503", "429", "cut", "malformed", "stall-mid-stream", "slow-first-byte"],
)
async def test_each_fault_is_retried_then_the_candidate_arrives(loopback, model_config, kit, fault, kind):
    loopback.add(fault, Reply(kit.fenced(kit.GOOD_CODE)))
    proposer = ModelProposer(model_config.model)
    if kind == "timeout":
        model_config.model.timeout_s = 1.0  # the slow first byte hits the whole-request timeout
    reply = await proposer.complete(proposer_prompt(kit), None, 500)
    assert reply.failure == "" and reply.attempts == 2
    assert [f.kind for f in reply.faults] == [kind]
    assert "```python" in reply.text and len(loopback.chat_requests()) == 2


async def test_malformed_non_streaming_body_is_retried(loopback, model_config, kit):
    model_config.model.stream = False
    loopback.add(Reply("x", malformed=True), Reply(kit.fenced(kit.GOOD_CODE), prompt_tokens=10, completion_tokens=20))
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code == kit.GOOD_CODE
    assert "stream" not in loopback.chat_requests()[1].body
    assert (proposal.usage.prompt_tokens, proposal.usage.completion_tokens) == (10, 20)


async def test_retry_after_is_honoured(loopback, model_config, kit):
    loopback.add(Reply(status=429, retry_after=0.6), Reply(kit.fenced(kit.GOOD_CODE)))
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    first, second = loopback.chat_requests()
    waited = second.at - first.at
    assert proposal.code is not None
    assert 0.6 <= waited < 0.6 + 0.5  # never earlier than asked, not much later (base backoff is 0.02 s)


async def test_retry_budget_exhausted_fails_cleanly(loopback, model_config, kit):
    loopback.add(*[Reply(status=503)] * 4)  # retries=3: four attempts
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code is None
    assert proposal.failure.startswith("model endpoint failed after 4 attempts (server)")
    assert "503" in proposal.failure and len(loopback.chat_requests()) == 4
    assert proposal.usage.prompt_tokens == 0  # nothing was generated: nothing is charged


async def test_client_errors_are_not_retried(loopback, model_config, kit):
    loopback.add(Reply(status=401), Reply(kit.fenced(kit.GOOD_CODE)))
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code is None and "refused the request" in proposal.failure and "401" in proposal.failure
    assert "check the key in $OPENAI_API_KEY" in proposal.failure
    assert len(loopback.chat_requests()) == 1


async def test_refused_connection_fails_cleanly(loopback, model_config, kit):
    loopback.stop()
    started = time.monotonic()
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code is None
    assert "after 4 attempts (connection)" in proposal.failure
    assert time.monotonic() - started < 5


async def test_cancellation_mid_stream_closes_the_connection(loopback, model_config, kit):
    loopback.add(Reply(kit.fenced(kit.GOOD_CODE) * 20, chunk_chars=8, chunk_delay_s=0.02))
    first_token = asyncio.Event()
    task = asyncio.create_task(ModelProposer(model_config.model).propose(kit.make_request(), lambda _t: first_token.set()))
    await asyncio.wait_for(first_token.wait(), 5)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled_at < 1.0  # promptly, not after the request timeout
    request = loopback.chat_requests()[0]
    assert await asyncio.to_thread(loopback.wait_for, lambda: request.disconnected, 5.0)
    assert not request.finished


async def test_usage_is_estimated_when_the_server_reports_none(loopback, model_config, kit):
    model_config.model.model = "gpt-4o-mini"
    proposer = ModelProposer(model_config.model)
    loopback.add(Reply(status=400, error_message="Unrecognized request argument supplied: stream_options"), Reply(kit.fenced(kit.GOOD_CODE)))
    proposal = await proposer.propose(kit.make_request())
    assert "stream_options" not in loopback.chat_requests()[1].body
    assert proposal.usage.prompt_tokens == pytest.approx(len(proposal.prompt) / 4, rel=0.1)
    assert proposal.usage.completion_tokens == pytest.approx(len(proposal.raw_output) / 4, rel=0.1)
    assert proposal.usage.cost_usd > 0


async def test_reflect_turns_a_json_reply_into_a_lesson(loopback, model_config, kit):
    loopback.add(
        Reply('```json\n{"direction": "fusion", "title": "Fuse the tail", "description": "Apply the activation in the same loop.", "pitfalls": "keep float32 accumulation"}\n```'),
        Reply("I have no lesson to share."),
    )
    proposer = ModelProposer(model_config.model)
    result = EvalResult(status=Status.OK, correct=True, runtime_ms=1.0, ref_runtime_ms=2.0, speedup_eager=2.0)
    lesson = await proposer.reflect(kit.make_request(), kit.GOOD_CODE, result)
    assert lesson is not None
    assert (lesson.direction, lesson.title, lesson.pitfalls) == ("fusion", "Fuse the tail", "keep float32 accumulation")
    assert "speedup vs eager 2x" in loopback.chat_requests()[0].body["messages"][1]["content"]
    assert await proposer.reflect(kit.make_request(), kit.GOOD_CODE, result) is None


async def test_reflect_failure_returns_none(loopback, model_config, kit):
    loopback.add(*[Reply(status=500)] * 4)
    result = EvalResult(status=Status.COMPILE_ERROR)
    assert await ModelProposer(model_config.model).reflect(kit.make_request(), kit.GOOD_CODE, result) is None


def proposer_prompt(kit):
    from htam_engine.propose.prompt import build_prompt

    return build_prompt(kit.make_request())


@pytest.mark.parametrize(
    "message, dropped, added",
    [
        ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "max_completion_tokens"),
        ("Unsupported value: 'temperature' does not support 0.2 with this model.", "temperature", None),
        ("Unknown parameter: seed", "seed", None),
    ],
)
async def test_a_rejected_parameter_is_adapted_once(loopback, model_config, kit, message, dropped, added):
    loopback.add(Reply(status=400, error_message=message), Reply(kit.fenced(kit.GOOD_CODE)), Reply(kit.fenced(kit.GOOD_CODE)))
    proposer = ModelProposer(model_config.model)
    assert (await proposer.propose(kit.make_request())).code is not None
    assert (await proposer.propose(kit.make_request())).code is not None  # remembered: no second 400
    first, second, third = (r.body for r in loopback.chat_requests())
    assert dropped in first and dropped not in second and dropped not in third
    assert added is None or (second[added] == third[added] == model_config.model.max_tokens)


@pytest.mark.parametrize("stream", [True, False])
async def test_separate_reasoning_is_kept_inline_and_drafts_in_it_are_ignored(loopback, model_config, kit, stream):
    draft = "```python\nclass ModelNew:\n    pass\n```"
    model_config.model.stream = stream
    loopback.add(Reply(kit.fenced(kit.GOOD_CODE), reasoning=f"Let me think. A first draft:\n{draft}\nNo, fuse it."))
    shown: list[str] = []
    proposal = await ModelProposer(model_config.model).propose(kit.make_request(), shown.append)
    assert proposal.code == kit.GOOD_CODE
    assert proposal.raw_output.startswith("<think>Let me think.") and "No, fuse it.</think>\n" in proposal.raw_output
    assert "".join(shown) == proposal.raw_output


async def test_a_long_but_live_stream_is_not_cut_by_the_request_timeout(loopback, model_config, kit):
    model_config.model.timeout_s = 0.3  # to the first byte; the stall timeout (0.5 s) guards the rest
    loopback.add(Reply(kit.fenced(kit.GOOD_CODE), chunk_chars=30, chunk_delay_s=0.05))
    started = time.monotonic()
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert proposal.code == kit.GOOD_CODE and time.monotonic() - started > 0.6
    assert len(loopback.chat_requests()) == 1


async def test_a_context_overflow_shrinks_the_prompt_and_asks_again(loopback, model_config, kit):
    from htam_engine.evaluate.result import Diagnostics

    log = "\n".join(f"error line {i}" for i in range(3000))
    request = kit.make_request(best_code="a = 1\n" * 3000, best_result=EvalResult(status=Status.COMPILE_ERROR, diagnostics=Diagnostics(log=log)))
    overflow = Reply(status=400, error_message="This model's maximum context length is 8192 tokens. However, you requested 20000 tokens.")
    loopback.add(overflow, Reply(kit.fenced(kit.GOOD_CODE)))
    proposal = await ModelProposer(model_config.model).propose(request)
    assert proposal.code == kit.GOOD_CODE
    first, second = (len(r.body["messages"][1]["content"]) for r in loopback.chat_requests())
    assert second <= first / 2 and kit.PROBLEM_SOURCE.strip() in loopback.chat_requests()[1].body["messages"][1]["content"]


async def test_endpoint_check_reports_reachability_and_the_model(loopback, model_config):
    proposer = ModelProposer(model_config.model)
    found = await proposer.check()
    assert found.ok and found.models == ["loopback-model"] and found.model_listed is True
    model_config.model.model = "other"
    assert "does not list 'other'" in (await ModelProposer(model_config.model).check()).message
    loopback.stop()
    down = await proposer.check()
    assert not down.ok and "connection error" in down.message


async def test_concurrent_samples_share_one_proposer(loopback, model_config, kit):
    loopback.add(*[Reply(kit.fenced(kit.GOOD_CODE), chunk_chars=50, chunk_delay_s=0.01) for _ in range(3)])
    proposer = ModelProposer(model_config.model)
    streams: dict[int, list[str]] = {0: [], 1: [], 2: []}
    requests = [kit.make_request(sample=i) for i in range(3)]
    proposals = await asyncio.gather(*(proposer.propose(r, streams[r.sample].append) for r in requests))
    assert all(p.code == kit.GOOD_CODE for p in proposals)
    assert all("".join(streams[i]) == proposals[i].raw_output for i in range(3))
    assert sorted(r.body["seed"] for r in loopback.chat_requests()) == [0, 1, 2]


async def test_a_wrong_base_url_gets_a_hint(loopback, model_config, kit):
    model_config.model.base_url = loopback.base_url.removesuffix("/v1")  # POST /chat/completions: no such route
    proposal = await ModelProposer(model_config.model).propose(kit.make_request())
    assert "HTTP 404" in proposal.failure and "usually end in /v1" in proposal.failure
