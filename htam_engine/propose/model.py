"""The model proposer: any OpenAI-compatible chat-completions endpoint.

One `AsyncOpenAI` client with the package's own retries off (max_retries=0): the retry
policy here sees every fault, so a stream cut halfway is retried like a 503. Tokens go
to `on_token` as they arrive; cancelling the awaiting task closes the stream. After the
retry budget the Proposal comes back with `code=None` and a redacted reason — no
exception escapes `propose()` or `reflect()` except cancellation.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import openai

from htam_engine.evaluate.result import EvalResult
from htam_engine.propose.base import Lesson, Proposal, ProposalRequest, TokenSink, Usage
from htam_engine.propose.config import ModelSettings
from htam_engine.propose.extract import extract_module
from htam_engine.propose.prompt import BuiltPrompt, build_prompt
from htam_engine.propose.redact import redact
from htam_engine.propose.reflection import build_reflection_prompt, parse_lesson
from htam_engine.propose.retry import Fault, RetryPolicy, StreamCut, StreamStalled, classify

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # rough estimate when the server reports no usage
REFLECT_MAX_TOKENS = 1024
MIN_PROMPT_CHARS = 4_000  # below this only the problem and the contract are left anyway
_CONTEXT_WORDS = ("context length", "context_length", "context window", "maximum context", "too many tokens", "prompt is too long")
PLACEHOLDER_KEY = "no-key"  # local servers need none, but the client insists on one
THINK_OPEN, THINK_CLOSE = "<think>", "</think>\n"


@dataclass(slots=True)
class Reply:
    """One completed call: the text, what it cost, and how the attempts went."""

    text: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    attempts: int = 0
    faults: list[Fault] = field(default_factory=list)
    failure: str = ""  # set when the retry budget ran out or a fault is final


@dataclass(slots=True)
class EndpointCheck:
    """Whether the endpoint answers and serves the configured model (for a status line)."""

    ok: bool
    message: str  # one line, redacted
    models: list[str] = field(default_factory=list)
    model_listed: bool | None = None  # None when the server lists no models


@dataclass(slots=True)
class Compat:
    """Request parameters a given server accepts. Servers differ: older local ones reject
    `stream_options`, reasoning models reject `max_tokens` (wanting `max_completion_tokens`)
    and a custom temperature. A 400 naming one of these adapts the request once."""

    stream_options: bool = True
    max_tokens_name: str = "max_tokens"
    temperature: bool = True
    seed: bool = True

    def adapt(self, message: str) -> str | None:
        """Change the request for a 400 whose `message` names a parameter; what changed, or None."""
        text = message.lower()
        if self.stream_options and "stream_options" in text:
            self.stream_options = False  # usage gets estimated instead
            return "stream_options dropped"
        if self.max_tokens_name == "max_tokens" and "max_tokens" in text and "max_completion_tokens" in text:
            self.max_tokens_name = "max_completion_tokens"
            return "max_tokens renamed max_completion_tokens"
        if self.temperature and "temperature" in text:
            self.temperature = False
            return "temperature dropped"
        if self.seed and "seed" in text:
            self.seed = False
            return "seed dropped"
        return None


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class ModelProposer:
    name = "model"

    def __init__(
        self,
        settings: ModelSettings,
        *,
        client: openai.AsyncOpenAI | None = None,
        rng: random.Random | None = None,
    ):
        self.settings = settings
        self.policy = RetryPolicy(settings.retries, settings.backoff_base_s, settings.backoff_max_s)
        self.prices = settings.price_table()
        self._rng = rng or random.Random()
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url or None,
            api_key=settings.api_key.reveal() or PLACEHOLDER_KEY,
            max_retries=0,
            timeout=openai.Timeout(max(settings.timeout_s, settings.stall_timeout_s), connect=settings.connect_timeout_s),
        )
        self.compat = Compat()

    def __repr__(self) -> str:
        return f"ModelProposer(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def check(self, timeout_s: float = 10.0) -> EndpointCheck:
        """Ask the endpoint for its models once (no retries); never raises."""
        try:
            async with asyncio.timeout(timeout_s):
                page = await self._client.models.list()
                models = [m.id async for m in page]
        except Exception as exc:  # noqa: BLE001 - the answer is the status, not an exception
            return EndpointCheck(False, f"{self.settings.base_url or 'the OpenAI API'}: {classify(exc).message}")
        listed = (self.settings.model in models) if models else None
        where = self.settings.base_url or "the OpenAI API"
        note = "" if listed is not False else f"; it does not list {self.settings.model!r}"
        return EndpointCheck(True, redact(f"{where}: {len(models)} models{note}"), models, listed)

    async def propose(self, request: ProposalRequest, on_token: TokenSink | None = None) -> Proposal:
        bound, spent = self.settings.max_prompt_chars, Usage()
        while True:
            prompt = build_prompt(request, bound)
            reply = await self.complete(prompt, on_token, self.settings.max_tokens, seed=request.seed + request.sample)
            spent += reply.usage
            # A server with a small context window: shrink the trimmable sections and ask again.
            if not (reply.failure and _context_overflow(reply) and bound > MIN_PROMPT_CHARS and prompt.trimmable):
                break
            bound = max(MIN_PROMPT_CHARS, min(bound, len(prompt.user)) // 2)
            log.info("the prompt exceeds the model's context; retrying with at most %d characters", bound)
        proposal = Proposal(code=None, prompt=prompt.text, raw_output=reply.text, usage=spent, model=self.settings.model)
        if reply.failure:
            proposal.failure = reply.failure
            return proposal
        found = extract_module(reply.text)
        proposal.code = found.code
        if found.code is None:
            proposal.failure = found.failure
            if reply.finish_reason == "length":
                proposal.failure += f" (the reply hit the {self.settings.max_tokens}-token limit)"
        return proposal

    async def reflect(self, request: ProposalRequest, code: str, result: EvalResult) -> Lesson | None:
        if not self.settings.reflect:
            return None
        prompt = build_reflection_prompt(request, code, result)
        reply = await self.complete(prompt, None, REFLECT_MAX_TOKENS, seed=request.seed)
        if reply.failure:
            log.info("reflection failed: %s", reply.failure)
            return None
        known = {s.direction for s in request.selection.scores}
        return parse_lesson(reply.text, request.selection.direction, known)

    async def complete(self, prompt: BuiltPrompt, on_token: TokenSink | None, max_tokens: int, seed: int | None = None) -> Reply:
        """Ask until a complete reply arrives or the retry budget is spent."""
        reply = Reply()
        messages = prompt.messages()
        attempt = 0
        while True:
            reply.attempts += 1
            got: list[str] = []
            try:
                text, usage, finish = await self._attempt(messages, max_tokens, seed, on_token, got)
            except Exception as exc:  # noqa: BLE001 - every fault is classified, none escapes
                fault = classify(exc, mid_stream=bool(got))
                reply.faults.append(fault)
                if fault.status == 400 and (change := self.compat.adapt(fault.message)):
                    log.info("the endpoint rejected a parameter: %s; asking again", change)
                    continue  # not a fault of the endpoint: costs no retry and no wait
                if got:  # the server read the prompt and wrote part of a reply: that still costs
                    reply.usage += self._usage(messages, "".join(got), None)
                if not fault.retryable or attempt == self.policy.retries:
                    reply.text = "".join(got)
                    reply.failure = self._failure(reply)
                    return reply
                wait = self.policy.delay(attempt, fault, self._rng)
                attempt += 1
                log.info("model call attempt %d failed (%s); retrying in %.2f s", reply.attempts, fault.message, wait)
                if got:
                    await _deliver(on_token, f"\n[{fault.kind.replace('_', ' ')}: retrying]\n")
                await asyncio.sleep(wait)
                continue
            reply.text, reply.finish_reason = text, finish
            reply.usage += self._usage(messages, text, usage)
            return reply

    async def _attempt(
        self, messages: list[dict[str, str]], max_tokens: int, seed: int | None, on_token: TokenSink | None, got: list[str]
    ) -> tuple[str, Any, str | None]:
        s = self.settings
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages, self.compat.max_tokens_name: max_tokens}
        if self.compat.temperature:
            kwargs["temperature"] = s.temperature
        if seed is not None and self.compat.seed:
            kwargs["seed"] = seed
        if not s.stream:
            async with asyncio.timeout(s.timeout_s):
                resp = await self._client.chat.completions.create(**kwargs)
            if not resp.choices:
                raise StreamCut("the response holds no choices")
            message = resp.choices[0].message
            thought = _reasoning(message)
            text = (f"{THINK_OPEN}{thought}{THINK_CLOSE}" if thought else "") + (message.content or "")
            await _deliver(on_token, text)
            return text, resp.usage, resp.choices[0].finish_reason
        if self.compat.stream_options:
            kwargs["stream_options"] = {"include_usage": True}
        # A streamed reply may take many minutes (reasoning models): the request timeout bounds
        # the wait for the stream to start, the stall timeout every silence after that.
        async with asyncio.timeout(s.timeout_s):
            stream = await self._client.chat.completions.create(stream=True, **kwargs)
        usage, finish, thinking = None, None, False
        try:
            # One stall deadline, pushed forward by every chunk. (asyncio.wait_for per chunk
            # would be simpler, but on Python 3.11 it can swallow a cancellation.)
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(loop.time() + s.stall_timeout_s) as stall:
                async for chunk in stream:
                    stall.reschedule(loop.time() + s.stall_timeout_s)
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or []:
                        delta = choice.delta
                        thought = _reasoning(delta) if delta is not None else ""
                        piece = (delta.content if delta is not None else None) or ""
                        # Reasoning sent apart from the answer is kept inline between think tags,
                        # as other servers send it, so the stream shown equals raw_output.
                        if thought:
                            piece, thinking = (THINK_OPEN if not thinking else "") + thought + piece, True
                        elif piece and thinking:
                            piece, thinking = THINK_CLOSE + piece, False
                        if piece:
                            got.append(piece)
                            await _deliver(on_token, piece)
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except TimeoutError:
            raise StreamStalled(f"no data for {s.stall_timeout_s:g} s") from None
        finally:
            await stream.close()  # also on cancellation: the server sees the connection end
        if thinking:
            got.append(THINK_CLOSE)
            await _deliver(on_token, THINK_CLOSE)
        if finish is None:
            raise StreamCut(f"the stream ended without a finish reason after {len(''.join(got))} characters")
        return "".join(got), usage, finish

    def _usage(self, messages: list[dict[str, str]], text: str, reported: Any) -> Usage:
        if reported is not None and getattr(reported, "prompt_tokens", None) is not None:
            prompt_tokens, completion_tokens = int(reported.prompt_tokens), int(reported.completion_tokens or 0)
        else:
            prompt_tokens = sum(estimate_tokens(m["content"]) for m in messages)
            completion_tokens = estimate_tokens(text)
        cost = self.prices.cost(self.settings.model, prompt_tokens, completion_tokens)
        return Usage(prompt_tokens, completion_tokens, cost)

    def _failure(self, reply: Reply) -> str:
        last = reply.faults[-1]
        if not last.retryable:
            return redact(f"model endpoint refused the request: {last.message}{self._hint(last.status)}")
        kinds = ", ".join(sorted({f.kind for f in reply.faults if f.retryable}))
        return redact(f"model endpoint failed after {reply.attempts} attempts ({kinds}); last: {last.message}")


    def _hint(self, status: int | None) -> str:
        """What a person most likely has to fix for a refusal."""
        s = self.settings
        if status in (401, 403):
            return f" (check the key in ${s.api_key_env}, or set api_key_env to the variable that holds it)"
        if status == 404:
            base = s.base_url or "the OpenAI API"
            tail = "" if s.base_url.rstrip("/").endswith("/v1") or not s.base_url else "; OpenAI-compatible URLs usually end in /v1"
            return f" (is model {s.model!r} served at {base}?{tail})"
        return ""


def _context_overflow(reply: Reply) -> bool:
    last = reply.faults[-1] if reply.faults else None
    return last is not None and last.status in (400, 413) and any(w in last.message.lower() for w in _CONTEXT_WORDS)


def _reasoning(part: Any) -> str:
    """Reasoning text a server sends beside the answer (`reasoning_content` or `reasoning`)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(part, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


async def _deliver(on_token: TokenSink | None, text: str) -> None:
    if on_token is None or not text:
        return
    result = on_token(text)
    if inspect.isawaitable(result):
        await result
