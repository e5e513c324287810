"""Pydantic AI's deferred tools answered by Signoff (the ``pydantic-ai`` extra).

A tool declared ``requires_approval=True`` ends the run with ``DeferredToolRequests``.
``SignoffApprovals.answer`` proposes each requested call's arguments to a Signoff target
and turns each decision into the ``DeferredToolResults`` the next run takes: approved,
with the payload as approved as the call's ``override_args`` (a reviewer's amendment,
once accepted, runs with the reviewer's arguments), or denied with the reviewer's reason.
The proposal behind each call stays in ``proposals`` (by tool call id), for the tool to
follow its delivery or ``execute`` it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ToolCallPart

from signoff_client.client import AsyncSignoff
from signoff_client.outcomes import Amended, Approved, Outcome
from signoff_client.proposals import Proposal

__all__ = ["SignoffApprovals", "denial_of"]


@dataclass
class SignoffApprovals:
    """Answers a run's approval requests from Signoff's decisions on ``target``."""

    signoff: AsyncSignoff
    target: str
    subject: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = 3600.0
    accept_amendments: bool = True
    proposals: dict[str, Proposal] = field(default_factory=dict)

    async def answer(self, requests: DeferredToolRequests) -> DeferredToolResults:
        """Each approval request proposed, decided, and answered."""
        answers = {call.tool_call_id: await self.decide(call) for call in requests.approvals}
        return requests.build_results(approvals=answers)

    async def decide(self, call: ToolCallPart) -> ToolApproved | ToolDenied:
        """One call proposed to Signoff (keyed by its tool call id, so asking again after
        a crash answers with the same proposal), and its decision."""
        proposal = await self.signoff.propose(
            self.target,
            call.args_as_dict(),
            subject={**self.subject, "tool": call.tool_name},
            action=call.tool_name,
            key=f"pydantic-ai:{call.tool_call_id}",
        )
        self.proposals[call.tool_call_id] = proposal
        outcome = await proposal.wait(self.timeout)
        if isinstance(outcome, Amended) and self.accept_amendments:
            await proposal.accept_amendment(outcome.payload_digest)
            outcome = await proposal.wait(self.timeout)
        if isinstance(outcome, Approved):
            return ToolApproved(override_args=outcome.payload)
        return ToolDenied(denial_of(outcome))


def denial_of(outcome: Outcome) -> str:
    """What the model reads of a decision that was not an approval."""
    reason = getattr(outcome, "reason", None) or "no reason given"
    return f"not approved ({outcome.kind}: {reason})"
