"""A Pydantic AI agent whose refund tool needs a person's approval, asked of Signoff: the
run ends with the deferred call, Signoff's decision answers it, and the run goes on.

The tool is declared ``requires_approval=True``, so the run ends on a
``DeferredToolRequests``; each call is proposed to Signoff and answered with a
``DeferredToolResults``: approved (an amended payload as the call's overridden arguments)
or denied with the reviewer's reason. The model is a scripted ``FunctionModel``: no
network, no key. Run it with SIGNOFF_URL and SIGNOFF_TOKEN set; see README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    RunContext,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from signoff_client import Amended, Applied, Approved, AsyncSignoff, Proposal


def plan(ticket: str) -> dict[str, Any]:
    """The refund the model would propose for a ticket."""
    amount = 40 + 10 * sum(map(ord, ticket)) % 90
    return {"amount": amount, "currency": "EUR"}


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model's stand-in: call ``refund`` with the plan, then say what the tool answered."""
    parts = [part for message in messages for part in message.parts]
    answers = [part for part in parts if isinstance(part, ToolReturnPart)]
    if answers:
        return ModelResponse(parts=[TextPart(str(answers[-1].content))])
    ticket = next(str(part.content) for part in parts if isinstance(part, UserPromptPart))
    return ModelResponse(parts=[ToolCallPart("refund", plan(ticket), tool_call_id=f"c-{ticket}")])


@dataclass
class Desk:
    """What the tool needs: the Signoff client and the proposal behind each tool call."""

    signoff: AsyncSignoff
    target: str
    proposals: dict[str, Proposal] = field(default_factory=dict)


agent = Agent(FunctionModel(scripted), deps_type=Desk, output_type=[str, DeferredToolRequests])


@agent.tool(requires_approval=True)
async def refund(ctx: RunContext[Desk], amount: int, currency: str) -> str:
    """Refund the customer. Runs once approved, with the arguments as approved; Signoff
    delivers the approved refund to its target, so this waits for how that ends."""
    assert ctx.tool_call_id is not None
    proposal = ctx.deps.proposals[ctx.tool_call_id]
    outcome = await proposal.wait(timeout=600)
    amended = " (as amended)" if proposal.state.revision > 1 else ""
    if isinstance(outcome, Applied):
        return f"refund of {amount} {currency} applied{amended}"
    return f"refund of {amount} {currency} {outcome.kind}"


async def decide(desk: Desk, ticket: str, call: ToolCallPart) -> ToolApproved | ToolDenied:
    """Propose one deferred call to Signoff and turn its decision into the call's answer."""
    proposal = await desk.signoff.propose(
        desk.target, call.args_as_dict(), subject={"ticket": ticket}
    )
    desk.proposals[call.tool_call_id] = proposal
    outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Amended):
        await proposal.accept_amendment(outcome.payload_digest)
        outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Approved):
        return ToolApproved(override_args=outcome.payload)
    reason = getattr(outcome, "reason", None) or "no reason given"
    return ToolDenied(f"refund not made ({outcome.kind}: {reason})")


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the agent on a ticket, answering its deferred calls from Signoff's decisions."""
    desk = Desk(signoff, target)
    result = await agent.run(ticket, deps=desk)
    while isinstance(result.output, DeferredToolRequests):
        requests = result.output
        answers = {
            call.tool_call_id: await decide(desk, ticket, call) for call in requests.approvals
        }
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=requests.build_results(approvals=answers),
            deps=desk,
        )
    return f"{ticket}: {result.output}"


async def main(target: str, tickets: list[str]) -> None:
    async with AsyncSignoff.from_env() as signoff:
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--ticket", action="append", required=True, help="a ticket id")
    args = parser.parse_args()
    asyncio.run(main(args.target, args.ticket))
