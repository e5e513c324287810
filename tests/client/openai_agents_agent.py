"""An agent process for the tests, run with the OpenAI Agents SDK's venv
(``.venv-openai-agents``): one run of an agent whose ``refund`` tool has
``needs_approval=True``, its interruption answered by ``signoff_client.openai_agents``,
the approved refund executed once through Signoff. The model is scripted; it records the
tool outputs it is given. Prints one JSON line: the final output, the payloads the tool
executed, and what the model saw. Run with SIGNOFF_URL and SIGNOFF_TOKEN set, the
target's name as argument."""

from __future__ import annotations

import asyncio
import json
import sys
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
from signoff_client import AsyncSignoff, execute
from signoff_client.openai_agents import SignoffApprovals

SEEN: list[str] = []  # the tool outputs the model was given
EXECUTED: list[dict[str, Any]] = []  # the payloads the refund ran with


class ScriptedModel(Model):
    """Call ``refund`` for 120 EUR, then say what the tool answered."""

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
        answers = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
        if answers:
            SEEN.extend(answers)
            text = ResponseOutputText(type="output_text", text=answers[-1], annotations=[])
            said = ResponseOutputMessage(
                id="m-1", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[said], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"c-{uuid.uuid4().hex}",  # as a model's: unique to the call
            name="refund",
            arguments=json.dumps({"amount": 120, "currency": "EUR"}),
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
        raise NotImplementedError("the tests run the agent without streaming")


def pay(**payload: Any) -> str:
    EXECUTED.append(payload)
    return f"refunded {payload['amount']} {payload['currency']}"


@function_tool(needs_approval=True)
async def refund(ctx: ToolContext[SignoffApprovals], amount: int, currency: str) -> str:
    """Refund the customer, once, with the payload as approved (amended or not)."""
    done: str = await execute(ctx.context.proposals[ctx.tool_call_id], pay)
    return done


async def main(target: str) -> dict[str, Any]:
    set_tracing_disabled(True)
    agent = Agent[SignoffApprovals](name="refunds", tools=[refund], model=ScriptedModel())
    async with AsyncSignoff.from_env() as signoff:
        approvals = SignoffApprovals(signoff, target, subject={"ticket": "T-1"}, timeout=30)
        result = await Runner.run(agent, "T-1", context=approvals)
        while result.interruptions:
            result = await Runner.run(agent, await approvals.decide(result), context=approvals)
    return {"output": result.final_output, "executed": EXECUTED, "seen": SEEN}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
