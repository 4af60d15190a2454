"""Approval of candidates: policies, and decision futures a front end resolves.

A candidate either gets a decision from the policy at once, or waits on a
future that `Approvals.decide(request_id, Decision)` resolves (the TUI, the
terminal prompt of `htam run`, or a test). Actions:

- approve: evaluate the code as proposed
- veto:    do not evaluate; the reason goes into memory and the next prompts
- edit:    evaluate `Decision.edited_code` instead
- skip:    do not evaluate; nothing is learned from it
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from htam_engine.errors import UsageError
from htam_engine.session.model import Decision

ACTIONS = ("approve", "veto", "edit", "skip")

# name -> one-line meaning (the CLI's --help and the TUI read this)
POLICIES: dict[str, str] = {
    "ask": "always ask a person",
    "auto": "approve every candidate",
    "auto-static": "approve when the static integrity checks find nothing, otherwise ask",
    "ask-on-change": "ask only when the step's direction differs from the previous step's",
}
# Policies that may need a person at some point.
ASKING_POLICIES = ("ask", "auto-static", "ask-on-change")


def check_policy(name: str) -> str:
    if name not in POLICIES:
        raise UsageError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    return name


def check_decision(decision: Decision) -> None:
    if decision.action not in ACTIONS:
        raise UsageError(f"unknown action {decision.action!r} (choose from {', '.join(ACTIONS)})")
    if decision.action == "edit" and not (decision.edited_code or "").strip():
        raise UsageError("an edit decision needs the edited code")


@dataclass(slots=True)
class Verdict:
    """What the policy says before anyone is asked: a decision, or None to ask."""

    decision: Decision | None
    why: str = ""


def policy_verdict(
    policy: str,
    *,
    direction: str,
    previous_direction: str | None,
    static_findings: list | None,
) -> Verdict:
    """The one place the policies are defined. `static_findings` is only consulted by auto-static."""
    if policy == "auto":
        return Verdict(Decision("approve", by="auto"))
    if policy == "auto-static":
        blocking = [f for f in (static_findings or []) if getattr(f, "severity", "reject") != "warn"]
        if not blocking:
            return Verdict(Decision("approve", by="auto-static"))
        return Verdict(None, "static checks: " + "; ".join(f"{f.rule}: {f.message}" for f in blocking))
    if policy == "ask-on-change":
        if previous_direction is not None and previous_direction == direction:
            return Verdict(Decision("approve", by="ask-on-change"))
        return Verdict(None, f"direction changed to {direction}")
    return Verdict(None, "policy ask")


class Approvals:
    """Pending decision futures by request id."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Decision]] = {}

    def open(self, request_id: str) -> asyncio.Future[Decision]:
        fut: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        return fut

    def close(self, request_id: str) -> None:
        self._pending.pop(request_id, None)

    def pending_ids(self) -> list[str]:
        return [rid for rid, fut in self._pending.items() if not fut.done()]

    def decide(self, request_id: str, decision: Decision) -> None:
        check_decision(decision)
        fut = self._pending.get(request_id)
        if fut is None or fut.done():
            raise UsageError(f"no pending approval {request_id!r}")
        fut.set_result(decision)

    def decide_all(self, decision: Decision) -> int:
        n = 0
        for rid in self.pending_ids():
            self._pending[rid].set_result(decision)
            n += 1
        return n
