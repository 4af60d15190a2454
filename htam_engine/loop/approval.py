"""Approval of candidates: the policies, and the decision requests a front end resolves.

A candidate either gets a decision from the policy at once, or the engine opens a
`DecisionRequest` and waits on it. The request travels to every front end inside the
`ApprovalRequested` event (as a permission request carries its future); whoever answers
calls one of its typed methods (`approve()`, `veto(reason)`, `edit(code)`, `skip()`), which
records the decision as the person's. The engine keeps the one list of open requests
(`Pending`); approve-all and stop resolve them there.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from htam_engine.errors import UsageError
from htam_engine.evaluate.result import EvalResult
from htam_engine.session.model import Action, Decider, Decision, Policy

# policy -> one-line meaning (the CLI's --help and the app read this)
POLICIES: dict[Policy, str] = {
    Policy.ASK: "always ask a person",
    Policy.AUTO: "approve every candidate",
    Policy.AUTO_STATIC: "approve when the static integrity checks find nothing, otherwise ask",
    Policy.ASK_ON_CHANGE: "ask only when the step's direction differs from the previous step's",
}


def check_policy(name: str | Policy) -> Policy:
    try:
        return Policy(name)
    except ValueError:
        raise UsageError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})") from None


class DecisionClosed(UsageError):
    """The request was already decided (by a person, approve-all or stop)."""


@dataclass(slots=True, eq=False)
class DecisionRequest:
    """One candidate waiting for a person, and the handle that decides it.

    Everything a front end shows about the decision is here: the candidate, the best code it
    would replace, the direction and strategies that produced it, why the policy asked."""

    step: int
    sample: int
    code: str
    best_code: str | None = None
    direction: str = ""
    strategies: list[str] = field(default_factory=list)  # titles of the retrieved strategies
    template: str | None = None  # the offline proposer's design move, when it made the candidate
    why: str = ""  # why the policy asked instead of deciding
    result: EvalResult | None = None  # set when the candidate was evaluated before asking
    _future: asyncio.Future[Decision] = field(default_factory=lambda: asyncio.get_running_loop().create_future(),
                                              repr=False)

    @property
    def open(self) -> bool:
        return not self._future.done()

    # ---- a person's answers ----------------------------------------------------------
    def approve(self) -> None:
        self.resolve(Decision(Action.APPROVE, Decider.PERSON))

    def veto(self, reason: str = "") -> None:
        self.resolve(Decision(Action.VETO, Decider.PERSON, reason=reason.strip()))

    def edit(self, code: str) -> None:
        if not code.strip():
            raise UsageError("an edit needs the edited code")
        self.resolve(Decision(Action.EDIT, Decider.PERSON, edited_code=code))

    def skip(self) -> None:
        self.resolve(Decision(Action.SKIP, Decider.PERSON))

    # ---- the engine's side -----------------------------------------------------------
    def resolve(self, decision: Decision) -> None:
        if not self.open:
            raise DecisionClosed(f"step {self.step}, sample {self.sample} is already decided")
        self._future.set_result(decision)

    async def wait(self) -> Decision:
        return await self._future


class Pending:
    """The engine's open decision requests, oldest first: the one list front ends read
    (through the events) and approve-all and stop resolve."""

    def __init__(self) -> None:
        self._requests: list[DecisionRequest] = []

    def add(self, request: DecisionRequest) -> None:
        self._requests.append(request)

    def remove(self, request: DecisionRequest) -> None:
        if request in self._requests:
            self._requests.remove(request)

    def open(self) -> tuple[DecisionRequest, ...]:
        return tuple(r for r in self._requests if r.open)

    def resolve_all(self, decision: Decision) -> int:
        """Decide every open request alike; how many there were."""
        requests = self.open()
        for r in requests:
            r.resolve(decision)
        return len(requests)


@dataclass(slots=True)
class Verdict:
    """What the policy says before anyone is asked: a decision, or None to ask."""

    decision: Decision | None
    why: str = ""


def policy_verdict(
    policy: Policy,
    *,
    direction: str,
    previous_direction: str | None,
    static_findings: list | None,
) -> Verdict:
    """The one place the policies are defined. `static_findings` is only consulted by auto-static."""
    policy = Policy(policy)
    by = Decider(policy.value)
    if policy is Policy.AUTO:
        return Verdict(Decision(Action.APPROVE, by))
    if policy is Policy.AUTO_STATIC:
        blocking = [f for f in (static_findings or []) if getattr(f, "severity", "reject") != "warn"]
        if not blocking:
            return Verdict(Decision(Action.APPROVE, by))
        return Verdict(None, "static checks: " + "; ".join(f"{f.rule}: {f.message}" for f in blocking))
    if policy is Policy.ASK_ON_CHANGE:
        if previous_direction is not None and previous_direction == direction:
            return Verdict(Decision(Action.APPROVE, by))
        return Verdict(None, f"direction changed to {direction}")
    return Verdict(None, "policy ask")
