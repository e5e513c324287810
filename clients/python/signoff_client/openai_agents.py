"""The OpenAI Agents SDK's tool approvals answered by Signoff (the ``openai-agents`` extra).

A function tool with ``needs_approval=True`` ends the run with interruptions.
``SignoffApprovals.decide`` proposes each interrupted call's arguments to a Signoff target
and records the decision in the run's state (``approve``, or ``reject`` with the reviewer's
reason as the message the model reads); ``Runner.run(agent, state)`` then resumes. The
proposal behind each call stays in ``proposals`` (by call id), for the tool to follow its
delivery or ``execute`` it once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents import RunResult, RunState, ToolApprovalItem

from signoff_client.client import AsyncSignoff
from signoff_client.outcomes import Amended, Approved
from signoff_client.proposals import Proposal

__all__ = ["SignoffApprovals"]


@dataclass
class SignoffApprovals:
    """Answers a run's interruptions from Signoff's decisions on ``target``."""

    signoff: AsyncSignoff
    target: str
    subject: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = 3600.0
    accept_amendments: bool = True
    proposals: dict[str, Proposal] = field(default_factory=dict)

    async def decide(self, result: RunResult) -> RunState[Any]:
        """The run's state with each interruption approved or rejected as Signoff decided."""
        state = result.to_state()
        for item in result.interruptions:
            refused = await self.refusal(item)
            if refused is None:
                state.approve(item)
            else:
                state.reject(item, rejection_message=refused)
        return state

    async def refusal(self, item: ToolApprovalItem) -> str | None:
        """Propose one interrupted call (keyed by its call id, so asking again after a
        crash answers with the same proposal); ``None`` once approved, else why not."""
        assert item.call_id is not None
        proposal = await self.signoff.propose(
            self.target,
            json.loads(item.arguments or "{}"),
            subject={**self.subject, "tool": item.tool_name},
            action=item.tool_name,
            key=f"openai-agents:{item.call_id}",
        )
        self.proposals[item.call_id] = proposal
        outcome = await proposal.wait(self.timeout)
        if isinstance(outcome, Amended) and self.accept_amendments:
            await proposal.accept_amendment(outcome.payload_digest)
            outcome = await proposal.wait(self.timeout)
        if isinstance(outcome, Approved):
            return None
        reason = getattr(outcome, "reason", None) or "no reason given"
        return f"not approved ({outcome.kind}: {reason})"
