"""Approval policies and decision futures."""

import asyncio

import pytest

from htam_engine.errors import UsageError
from htam_engine.evaluate.result import Finding
from htam_engine.loop.approval import DecisionClosed, DecisionRequest, Pending, check_policy, policy_verdict
from htam_engine.session.model import Action, Decider, Decision


def test_auto_approves_and_ask_asks():
    assert policy_verdict("auto", direction="a", previous_direction=None, static_findings=None).decision.action == "approve"
    assert policy_verdict("ask", direction="a", previous_direction="a", static_findings=None).decision is None


def test_auto_static_asks_only_when_a_check_blocks():
    clean = policy_verdict("auto-static", direction="a", previous_direction=None,
                           static_findings=[Finding("style", "minor", severity="warn")])
    assert clean.decision.action == "approve" and clean.decision.by == "auto-static"
    dirty = policy_verdict("auto-static", direction="a", previous_direction=None,
                           static_findings=[Finding("no_kernel", "pure PyTorch")])
    assert dirty.decision is None and "no_kernel" in dirty.why


def test_ask_on_change_asks_when_the_direction_changes():
    same = policy_verdict("ask-on-change", direction="fusion", previous_direction="fusion", static_findings=None)
    assert same.decision.action == "approve"
    assert policy_verdict("ask-on-change", direction="tiling", previous_direction="fusion",
                          static_findings=None).decision is None
    assert policy_verdict("ask-on-change", direction="tiling", previous_direction=None,
                          static_findings=None).decision is None


def test_unknown_policy_and_bad_decisions_are_usage_errors():
    with pytest.raises(UsageError):
        check_policy("yolo")
    with pytest.raises(ValueError):
        Decision("maybe", by="person")


async def test_a_request_is_decided_once_and_by_the_person():
    request = DecisionRequest(2, 1, "code")
    with pytest.raises(UsageError):
        request.edit("  ")
    request.veto("uses atomics ")
    decision = await asyncio.wait_for(request.wait(), 1)
    assert (decision.action, decision.by, decision.reason) == (Action.VETO, Decider.PERSON, "uses atomics")
    assert not request.open
    with pytest.raises(DecisionClosed):
        request.approve()


async def test_pending_resolves_only_the_open_requests():
    pending = Pending()
    first, second = DecisionRequest(1, 0, "a"), DecisionRequest(1, 1, "b")
    pending.add(first)
    pending.add(second)
    first.skip()
    assert pending.open() == (second,)
    assert pending.resolve_all(Decision(Action.APPROVE, Decider.AUTO)) == 1
    assert (await second.wait()).by is Decider.AUTO and pending.open() == ()
