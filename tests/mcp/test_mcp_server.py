"""``signoff-mcp`` driven by the official MCP client (``ClientSession``) over stdio and
over streamable HTTP, against a real ``signoff serve``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult
from signoff_client.mcp_server import MULTI_ROUND_VERSION

from tests.client.conftest import REFUND_ANSWER, DeliveringServer, Stage, staged_on
from tests.conftest import checked_once
from tests.processes import free_port

pytestmark = checked_once

TOOLS = {
    "list_targets",
    "propose_action",
    "get_proposal",
    "wait_for_decision",
    "accept_amendment",
    "prepare_draft",
    "get_draft",
}


def mcp_env(stage: Stage, token: str) -> dict[str, str]:
    return {**os.environ, "SIGNOFF_URL": stage.server.url, "SIGNOFF_TOKEN": token}


@contextlib.asynccontextmanager
async def over_stdio(
    stage: Stage, token: str, modern: bool = False
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "signoff_client.mcp_server"], env=mcp_env(stage, token)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await connect(session, modern)
        yield session


async def connect(session: ClientSession, modern: bool) -> None:
    """The ``initialize`` handshake, or (``modern``) ``server/discover`` on the protocol
    revision with the multi round-trip flow."""
    if not modern:
        await session.initialize()
        return
    found = await session.discover()
    assert MULTI_ROUND_VERSION in found.supported_versions
    assert session.protocol_version == MULTI_ROUND_VERSION


@contextlib.asynccontextmanager
async def over_http(stage: Stage, token: str, modern: bool = False) -> AsyncIterator[ClientSession]:
    port = free_port()
    # Through the server's command line, which hands over to signoff-client's server.
    command = ["-m", "signoff", "mcp", "--transport", "http", "--port", str(port)]
    # Over HTTP the client brings its token; the server's environment holds none.
    env = {k: v for k, v in mcp_env(stage, token).items() if k != "SIGNOFF_TOKEN"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 20
        async with httpx.AsyncClient() as http:
            while True:
                assert process.returncode is None, "signoff mcp exited"
                with contextlib.suppress(httpx.TransportError):
                    await http.get(url)
                    break
                assert time.monotonic() < deadline, "signoff-mcp did not listen"
                await asyncio.sleep(0.1)
        async with (
            bearer(token) as http_client,
            streamable_http_client(url, http_client=http_client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await connect(session, modern)
            yield session
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


def bearer(token: str) -> httpx2.AsyncClient:
    """An HTTP client for the MCP client that sends ``token``, with the SDK's timeouts."""
    timeout = httpx2.Timeout(30, read=300)
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.content, "a readable text too"
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


async def round_trip(stage: Stage, session: ClientSession) -> None:
    """Tools listed with their schemas; propose, a reviewer approves, it is applied."""
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    assert listed["propose_action"].input_schema["required"] == ["target", "payload"]
    assert listed["wait_for_decision"].output_schema is not None

    targets = structured(await session.call_tool("list_targets", {}))["targets"]
    target = next(t for t in targets if t["id"] == stage.world.target_id)
    assert target["input_schema"]["required"] == ["amount", "currency"]

    payload = {"amount": 75, "currency": "EUR"}
    proposed = structured(
        await session.call_tool(
            "propose_action",
            {"target": target["name"], "payload": payload, "subject": {"order": "o-9"}},
        )
    )
    assert proposed["state"] == "APPROVAL_REQUIRED" and proposed["payload"] == payload
    proposal_id = proposed["proposal_id"]

    waiting = structured(
        await session.call_tool(
            "wait_for_decision", {"proposal_id": proposal_id, "timeout_seconds": 0.5}
        )
    )
    assert waiting["status"] == "still_waiting" and proposal_id in waiting["message"]

    await stage.decide(proposal_id)
    decided: dict[str, Any] = {"status": "still_waiting"}
    for _ in range(5):
        decided = structured(
            await session.call_tool(
                "wait_for_decision", {"proposal_id": proposal_id, "timeout_seconds": 10}
            )
        )
        if decided["status"] == "applied":
            break
    assert decided["status"] == "applied", decided
    assert decided["payload_digest"] == proposed["payload_digest"]  # the one approved
    assert decided["result"]["statusCode"] == 200
    assert "body" not in decided["result"]  # the target declares no output schema

    bad = await session.call_tool(
        "propose_action",
        {"target": target["name"], "payload": {"amount": "many", "currency": "EUR"}},
    )
    assert "PAYLOAD_SCHEMA_INVALID" in error_text(bad) and "/amount" in error_text(bad)


POLICY = {
    "rules": [
        {"name": "large", "when": {"properties": {"amount": {"minimum": 1000}}}, "approvals": 2},
        {"name": "small", "when": {"properties": {"amount": {"maximum": 10}}}, "approvals": 0},
    ],
    "default": {"approvals": 1},
}


async def test_list_targets_shows_the_approval_policy(
    delivering_server: DeliveringServer, tmp_path: Path
) -> None:
    shared = delivering_server.shared
    async with (
        staged_on(
            shared.server,
            shared.sessionmaker,
            shared.database_url,
            delivering_server.queue,
            tmp_path,
            approvalPolicy=POLICY,
        ) as stage,
        over_stdio(stage, stage.world.agent) as session,
    ):
        targets = structured(await session.call_tool("list_targets", {}))["targets"]
    target = next(t for t in targets if t["id"] == stage.world.target_id)
    assert target["required_approvals"] == 1 and target["agent_executes"] is False
    assert target["rules"] == [
        {"name": "large", "when": POLICY["rules"][0]["when"], "approvals": 2},
        {"name": "small", "when": POLICY["rules"][1]["when"], "approvals": 0},
    ]


async def test_over_stdio_a_proposal_goes_from_tool_call_to_applied(stage: Stage) -> None:
    async with over_stdio(stage, stage.world.agent) as session:
        await round_trip(stage, session)


async def test_over_http_a_proposal_goes_from_tool_call_to_applied(stage: Stage) -> None:
    async with over_http(stage, stage.world.agent) as session:
        await round_trip(stage, session)


async def test_the_answer_of_a_target_with_an_output_schema_is_in_the_results(
    result_stage: Stage,
) -> None:
    """wait_for_decision's and get_proposal's structured results carry the receiver's
    answer as result.body."""
    stage = result_stage
    async with over_stdio(stage, stage.world.agent) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        for name in ("get_proposal", "wait_for_decision"):
            assert "result" in json.dumps(listed[name].output_schema)
        proposed = structured(
            await session.call_tool(
                "propose_action",
                {"target": stage.world.target_id, "payload": {"amount": 40, "currency": "EUR"}},
            )
        )
        assert proposed["result"] is None
        proposal_id = proposed["proposal_id"]
        await stage.decide(proposal_id)
        decided: dict[str, Any] = {"status": "still_waiting"}
        for _ in range(5):
            decided = structured(
                await session.call_tool(
                    "wait_for_decision", {"proposal_id": proposal_id, "timeout_seconds": 10}
                )
            )
            if decided["status"] == "applied":
                break
        assert decided["status"] == "applied", decided
        assert decided["result"]["body"] == REFUND_ANSWER
        shown = structured(await session.call_tool("get_proposal", {"proposal_id": proposal_id}))
        assert shown["state"] == "APPLIED" and shown["result"]["body"] == REFUND_ANSWER
        assert shown["result"]["statusCode"] == 200


async def test_a_token_without_the_agent_role_is_refused(stage: Stage) -> None:
    async with over_stdio(stage, stage.world.reviewers[0]) as session:
        refused = await session.call_tool("list_targets", {})
        assert "FORBIDDEN" in error_text(refused) and "agent" in error_text(refused)


@pytest.mark.parametrize("transport", [over_stdio, over_http], ids=["stdio", "http"])
async def test_a_long_decision_is_waited_for_in_rounds_the_client_calls_again(
    stage: Stage, transport: Any
) -> None:
    """Multi round-trip: while undecided, wait_for_decision answers "input required" with a
    request state and no question; each call again with it holds for a bounded time only,
    until the decision (then the delivery) ends the rounds with a structured result."""
    async with transport(stage, stage.world.agent, modern=True) as session:
        proposed = structured(
            await session.call_tool(
                "propose_action",
                {"target": stage.world.target_id, "payload": {"amount": 60, "currency": "EUR"}},
            )
        )
        arguments = {"proposal_id": proposed["proposal_id"], "timeout_seconds": 1}
        rounds: list[InputRequiredResult] = []
        for _ in range(2):
            started = time.monotonic()
            answer = await session.call_tool(
                "wait_for_decision",
                arguments,
                request_state=rounds[-1].request_state if rounds else None,
                allow_input_required=True,
            )
            assert 1 <= time.monotonic() - started < 5, "a round holds the call a bounded time"
            assert isinstance(answer, InputRequiredResult), answer
            assert answer.request_state and not answer.input_requests
            rounds.append(answer)

        await stage.decide(proposed["proposal_id"])
        statuses: list[str] = []
        state = rounds[-1].request_state
        while not statuses or statuses[-1] != "applied":
            answer = await session.call_tool(
                "wait_for_decision", arguments, request_state=state, allow_input_required=True
            )
            if isinstance(answer, InputRequiredResult):
                rounds.append(answer)
                state = answer.request_state
                continue
            statuses.append(structured(answer)["status"])
            state = None
            assert len(statuses) <= 2 and len(rounds) < 60, statuses
        # Delivery may have ended before the call that learns of the approval.
        assert statuses in (["approved", "applied"], ["applied"])

        # The state is the server's own: one it did not seal is refused.
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await session.call_tool(
                "wait_for_decision",
                arguments,
                request_state=json.dumps({"waiting_on": proposed["proposal_id"]}),
                allow_input_required=True,
            )


async def test_the_sdk_client_calls_again_by_itself_until_decided(stage: Stage) -> None:
    """The official high-level ``Client`` speaks the flow: one ``call_tool`` of
    wait_for_decision returns the decision, however many bounded rounds it took."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "signoff_client.mcp_server"],
        env=mcp_env(stage, stage.world.agent),
    )
    async with Client(params) as client:
        assert client.session.protocol_version == MULTI_ROUND_VERSION
        made = await client.call_tool(
            "propose_action",
            {"target": stage.world.target_id, "payload": {"amount": 45, "currency": "EUR"}},
        )
        proposal_id = structured(made)["proposal_id"]
        waiting = asyncio.create_task(
            client.call_tool(
                "wait_for_decision", {"proposal_id": proposal_id, "timeout_seconds": 1}
            )
        )
        await asyncio.sleep(2.5)  # more than two rounds
        assert not waiting.done()
        await stage.decide(proposal_id)
        decided = structured(await asyncio.wait_for(waiting, 20))
        assert decided["status"] in ("approved", "applied")
