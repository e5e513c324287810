"""An OpenAI Agents SDK agent whose refund tool needs a person's approval, asked of
Signoff with ``signoff_client.openai_agents``: the run stops on the tool call, Signoff's
decision approves or rejects it in the run's state, and the run resumes from that state.
The model is a scripted ``Model`` implementation: no network, no key. See README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import AsyncIterator
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
from signoff_client import Applied, AsyncSignoff
from signoff_client.openai_agents import SignoffApprovals
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
            call_id=f"c-{ticket}-{uuid.uuid4().hex[:8]}",  # as a model's: unique
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


@function_tool(needs_approval=True)
async def refund(ctx: ToolContext[SignoffApprovals], amount: int, currency: str) -> str:
    """Refund the customer. Runs once approved; Signoff delivers the refund as approved (a
    reviewer may have amended it), so this waits for how that delivery ends."""
    proposal = ctx.context.proposals[ctx.tool_call_id]
    outcome = await proposal.wait(timeout=600)
    approved = proposal.state.payload
    amended = " (as amended)" if proposal.state.revision > 1 else ""
    done = "applied" if isinstance(outcome, Applied) else outcome.kind
    return f"refund of {approved['amount']} {approved['currency']} {done}{amended}"


agent = Agent[SignoffApprovals](name="refunds", tools=[refund], model=ScriptedModel())


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the agent on a ticket, resuming each interruption with Signoff's decision."""
    approvals = SignoffApprovals(signoff, target, subject={"ticket": ticket})
    result = await Runner.run(agent, ticket, context=approvals)
    while result.interruptions:
        result = await Runner.run(agent, await approvals.decide(result), context=approvals)
    return f"{ticket}: {result.final_output}"


async def main(target: str, tickets: list[str]) -> None:
    set_tracing_disabled(True)  # no traces sent anywhere
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
