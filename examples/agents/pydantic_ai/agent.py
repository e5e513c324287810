"""A Pydantic AI agent whose refund tool needs a person's approval, asked of Signoff with
``signoff_client.pydantic_ai``: the run ends with the deferred call, Signoff's decision
answers it (an amended payload as the call's overridden arguments), and the run goes on.
The model is a scripted ``FunctionModel``: no network, no key. See README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from signoff_client import Applied, AsyncSignoff
from signoff_client.pydantic_ai import SignoffApprovals
from signoff_client.targets import TargetNeeds, TargetNotReady, register_target, require_target

REFUND = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
# What this recipe needs of its target (README.md says it in words): a reviewer deciding
# every refund, with no approval policy; amendments the agent accepts before they are
# decided; Signoff delivering what is approved to a url.
NEEDS = TargetNeeds(input_schema=REFUND)


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
    call_id = f"c-{ticket}-{uuid.uuid4().hex[:8]}"  # as a model's: unique to this call
    return ModelResponse(parts=[ToolCallPart("refund", plan(ticket), tool_call_id=call_id)])


agent = Agent(
    FunctionModel(scripted), deps_type=SignoffApprovals, output_type=[str, DeferredToolRequests]
)


@agent.tool(requires_approval=True)
async def refund(ctx: RunContext[SignoffApprovals], amount: int, currency: str) -> str:
    """Refund the customer, as approved; Signoff delivers it, so this follows how it ends."""
    assert ctx.tool_call_id is not None
    proposal = ctx.deps.proposals[ctx.tool_call_id]
    outcome = await proposal.wait(timeout=600)
    amended = " (as amended)" if proposal.state.revision > 1 else ""
    done = "applied" if isinstance(outcome, Applied) else outcome.kind
    return f"refund of {amount} {currency} {done}{amended}"


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the agent on a ticket, answering its deferred calls from Signoff's decisions."""
    approvals = SignoffApprovals(signoff, target, subject={"ticket": ticket})
    result = await agent.run(ticket, deps=approvals)
    while isinstance(result.output, DeferredToolRequests):
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=await approvals.answer(result.output),
            deps=approvals,
        )
    return f"{ticket}: {result.output}"


async def main(target: str, tickets: list[str]) -> None:
    async with AsyncSignoff.from_env() as signoff:
        await require_target(signoff, target, NEEDS)
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


async def register(target: str, queue: str | None, url: str | None) -> None:
    """Register the target this recipe needs (SIGNOFF_TOKEN: an admin's token)."""
    async with AsyncSignoff.from_env() as signoff:
        print((await register_target(signoff, target, NEEDS, queue=queue, url=url)).line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", choices=["register"], help="register its target")
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--queue", help="register: the slug of the queue reviewing it")
    parser.add_argument("--url", help="register: where approved refunds are delivered")
    parser.add_argument("--ticket", action="append", default=[], help="a ticket id")
    args = parser.parse_args()
    step = (
        register(args.target, args.queue, args.url) if args.step else main(args.target, args.ticket)
    )
    try:
        asyncio.run(step)
    except TargetNotReady as missing:
        raise SystemExit(missing.message) from None
