"""``signoff_client.pydantic_ai`` against the real Pydantic AI with its scripted
``FunctionModel`` and a real ``signoff serve``: a reviewer's amendment reaches the tool as
the call's overridden arguments, a rejection reaches the model as the tool's result."""

from __future__ import annotations

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
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from signoff_client import AsyncSignoff, execute
from signoff_client.pydantic_ai import SignoffApprovals

from tests.agents.conftest import AMEND, amendment
from tests.client.conftest import Stage
from tests.client.test_client import target_name
from tests.conftest import checked_once

pytestmark = checked_once

REFUND = {"amount": 120, "currency": "EUR"}


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call ``refund`` once, then say what the tool answered."""
    answers = [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]
    if answers:
        return ModelResponse(parts=[TextPart(str(answers[-1].content))])
    call_id = f"call-{uuid.uuid4().hex}"  # as a model's: unique to the call
    return ModelResponse(parts=[ToolCallPart("refund", REFUND, tool_call_id=call_id)])


def refund_agent(
    calls: list[dict[str, Any]],
) -> Agent[SignoffApprovals, str | DeferredToolRequests]:
    """An agent whose ``refund`` needs approval; ``calls`` gets the arguments it ran with."""
    agent: Agent[SignoffApprovals, str | DeferredToolRequests] = Agent(
        FunctionModel(scripted),
        deps_type=SignoffApprovals,
        output_type=[str, DeferredToolRequests],  # type: ignore[arg-type]
    )

    @agent.tool(requires_approval=True)
    async def refund(ctx: RunContext[SignoffApprovals], amount: int, currency: str) -> str:
        calls.append({"amount": amount, "currency": currency})
        assert ctx.tool_call_id is not None
        proposal = ctx.deps.proposals[ctx.tool_call_id]
        done: str = await execute(
            proposal, lambda **paid: "refunded {amount} {currency}".format(**paid)
        )
        return done

    return agent


async def run_to_end(
    agent: Agent[SignoffApprovals, str | DeferredToolRequests], approvals: SignoffApprovals
) -> tuple[str, list[ModelMessage]]:
    """The run, its deferred calls answered by ``approvals``, to its final output."""
    result = await agent.run("T-1", deps=approvals)
    while isinstance(result.output, DeferredToolRequests):
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=await approvals.answer(result.output),
            deps=approvals,
        )
    return result.output, result.all_messages()


async def pending(stage: Stage, revision: int) -> dict[str, Any]:
    """The stage's proposal once it waits for a reviewer at ``revision``."""
    query = (
        "query($q: ID) { proposals(queueId: $q, state: APPROVAL_REQUIRED) { nodes { id "
        "revision awaitingProposer payloadDigest } } }"
    )
    async with asyncio.timeout(30):
        while True:
            data = await stage.gql(query, {"q": stage.world.queue_id}, stage.world.admin)
            for node in data["proposals"]["nodes"]:
                if node["revision"] == revision and not node["awaitingProposer"]:
                    found: dict[str, Any] = node
                    return found
            await asyncio.sleep(0.1)


async def test_an_amendment_reaches_the_tool_as_its_arguments(agent_stage: Stage) -> None:
    stage, calls = agent_stage, []
    async with AsyncSignoff(stage.server.url, stage.world.agent) as signoff:
        approvals = SignoffApprovals(signoff, await target_name(stage))
        run = asyncio.create_task(run_to_end(refund_agent(calls), approvals))
        first = await pending(stage, 1)
        await stage.gql(
            AMEND, {"input": amendment(first, {"amount": 30})}, stage.world.reviewers[0]
        )
        await stage.world.decide(stage.world.reviewers[1], await pending(stage, 2))
        output, _ = await asyncio.wait_for(run, 30)
    assert calls == [{"amount": 30, "currency": "EUR"}]  # the model asked for 120
    assert output == "refunded 30 EUR"
    state = (await stage.proposal(first["id"]))["state"]
    assert state == "APPLIED"


async def test_a_rejection_is_the_tools_result_for_the_model(agent_stage: Stage) -> None:
    stage, calls = agent_stage, []
    async with AsyncSignoff(stage.server.url, stage.world.agent) as signoff:
        approvals = SignoffApprovals(signoff, await target_name(stage))
        run = asyncio.create_task(run_to_end(refund_agent(calls), approvals))
        first = await pending(stage, 1)
        await stage.decide(first["id"], "REJECTED", reason="Already refunded")
        output, messages = await asyncio.wait_for(run, 30)
    assert calls == []
    denial = "not approved (rejected: Already refunded)"
    returned = [
        part.content
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "refund"
    ]
    assert returned == [denial]  # what the model read as the tool's answer
    assert output == denial
