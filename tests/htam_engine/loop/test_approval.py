"""Approval policies and decision futures."""

import asyncio

import pytest

from htam_engine.errors import UsageError
from htam_engine.evaluate.result import Finding
from htam_engine.loop.approval import Approvals, check_policy, policy_verdict
from htam_engine.session.model import Decision


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
    with pytest.raises(UsageError):
        Approvals().decide("1-0", Decision("maybe", by="person"))
    with pytest.raises(UsageError):
        Approvals().decide("1-0", Decision("edit", by="person", edited_code=""))


async def test_decide_resolves_the_waiting_future_once():
    approvals = Approvals()
    fut = approvals.open("2-1")
    assert approvals.pending_ids() == ["2-1"]
    approvals.decide("2-1", Decision("veto", by="person", reason="uses atomics"))
    assert (await asyncio.wait_for(fut, 1)).reason == "uses atomics"
    with pytest.raises(UsageError):
        approvals.decide("2-1", Decision("approve", by="person"))
    assert approvals.pending_ids() == []
