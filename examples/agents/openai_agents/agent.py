"""An OpenAI Agents SDK agent whose refund tool needs a person's approval, asked of
Signoff: the run stops on the tool call, Signoff's decision approves or rejects it in the
run's state, and the run is resumed from that state.

The tool is a function tool with ``needs_approval=True``, so the run ends with an
interruption; its arguments are proposed to Signoff, and ``state.approve()`` or
``state.reject()`` records the decision before ``Runner.run`` resumes. The model is a
scripted ``Model`` implementation: no network, no key. Run it with SIGNOFF_URL and
SIGNOFF_TOKEN set; see README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agents import (
    Agent,
    AgentOutputSchemaBase,
    Handoff,
    Model,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    Runner,
    Tool,
    ToolApprovalItem,
    TResponseInputItem,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.items import TResponseStreamEvent
from agents.tool_context import ToolContext
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam
from signoff_client import Amended, Applied, Approved, AsyncSignoff, Proposal


def plan(ticket: str) -> dict[str, Any]:
    """The refund the model would propose for a ticket."""
    amount = 40 + 10 * sum(map(ord, ticket)) % 90
    return {"amount": amount, "currency": "EUR"}


class ScriptedModel(Model):
    """The model's stand-in: call ``refund`` with the plan, then say what the tool answered
    (its result, or the reason it was rejected)."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        items: list[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else input
        answers = [i["output"] for i in items if i.get("type") == "function_call_output"]
        if answers:
            text = ResponseOutputText(type="output_text", text=str(answers[-1]), annotations=[])
            said = ResponseOutputMessage(
                id="m-1", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[said], usage=Usage(), response_id=None)
        ticket = str(items[0]["content"])
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"c-{ticket}",
            name="refund",
            arguments=json.dumps(plan(ticket)),
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("this recipe runs the agent without streaming")


@dataclass
class Desk:
    """The run's context: the Signoff client and the proposal behind each tool call."""

    signoff: AsyncSignoff
    target: str
    proposals: dict[str, Proposal] = field(default_factory=dict)


@function_tool(needs_approval=True)
async def refund(ctx: ToolContext[Desk], amount: int, currency: str) -> str:
    """Refund the customer. Runs once approved; Signoff delivers the refund as approved (a
    reviewer may have amended it), so this waits for how that delivery ends."""
    proposal = ctx.context.proposals[ctx.tool_call_id]
    outcome = await proposal.wait(timeout=600)
    approved = proposal.state.payload
    refund = f"refund of {approved['amount']} {approved['currency']}"
    amended = " (as amended)" if proposal.state.revision > 1 else ""
    if isinstance(outcome, Applied):
        return f"{refund} applied{amended}"
    return f"{refund} {outcome.kind}"


async def decide(desk: Desk, ticket: str, item: ToolApprovalItem) -> str | None:
    """Propose one interrupted tool call to Signoff; None once approved, else why not."""
    payload = json.loads(item.arguments or "{}")
    proposal = await desk.signoff.propose(desk.target, payload, subject={"ticket": ticket})
    assert item.call_id is not None
    desk.proposals[item.call_id] = proposal
    outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Amended):
        await proposal.accept_amendment(outcome.payload_digest)
        outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Approved):
        return None
    reason = getattr(outcome, "reason", None) or "no reason given"
    return f"refund not made ({outcome.kind}: {reason})"


agent = Agent[Desk](name="refunds", tools=[refund], model=ScriptedModel())


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the agent on a ticket, resuming each interruption with Signoff's decision."""
    desk = Desk(signoff, target)
    result = await Runner.run(agent, ticket, context=desk)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            refused = await decide(desk, ticket, item)
            if refused is None:
                state.approve(item)
            else:
                state.reject(item, rejection_message=refused)
        result = await Runner.run(agent, state, context=desk)
    return f"{ticket}: {result.final_output}"


async def main(target: str, tickets: list[str]) -> None:
    set_tracing_disabled(True)  # no traces sent anywhere
    async with AsyncSignoff.from_env() as signoff:
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--ticket", action="append", required=True, help="a ticket id")
    args = parser.parse_args()
    asyncio.run(main(args.target, args.ticket))
