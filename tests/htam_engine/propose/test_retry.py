"""Backoff grows with jitter and never undercuts a server's Retry-After."""

from __future__ import annotations

import random
import time
from email.utils import formatdate

import pytest

from htam_engine.propose.retry import Fault, RetryPolicy, parse_retry_after


def test_backoff_grows_exponentially_with_bounded_jitter():
    policy, rng = RetryPolicy(retries=6, base_s=1.0, max_s=8.0), random.Random(1)
    fault = Fault("server", "HTTP 503", True)
    for attempt, ceiling in enumerate([1, 2, 4, 8, 8]):
        waits = [policy.delay(attempt, fault, rng) for _ in range(200)]
        assert ceiling / 2 <= min(waits) and max(waits) <= ceiling
        assert max(waits) - min(waits) > ceiling / 4  # jittered, not fixed


def test_retry_after_is_a_floor():
    policy, rng = RetryPolicy(base_s=0.1, max_s=1.0), random.Random(2)
    fault = Fault("rate_limit", "HTTP 429", True, retry_after_s=5.0)
    assert all(5.0 <= policy.delay(0, fault, rng) <= 5.1 for _ in range(50))


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
        ({"retry-after": "100000"}, 600.0),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date():
    got = parse_retry_after({"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert got is not None and 28 <= got <= 31
