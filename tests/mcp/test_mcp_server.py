"""``signoff-mcp`` driven by the official MCP client (``ClientSession``) over stdio and
over streamable HTTP, against a real ``signoff serve``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.client.conftest import Stage
from tests.processes import free_port

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
async def over_stdio(stage: Stage, token: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "signoff_client.mcp_server"], env=mcp_env(stage, token)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def over_http(stage: Stage, token: str) -> AsyncIterator[ClientSession]:
    port = free_port()
    # Through the server's command line, which hands over to signoff-client's server.
    command = ["-m", "signoff", "mcp", "--transport", "http", "--port", str(port)]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        env=mcp_env(stage, token),
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
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


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
    assert decided["result"]["statusCode"] == 200

    bad = await session.call_tool(
        "propose_action",
        {"target": target["name"], "payload": {"amount": "many", "currency": "EUR"}},
    )
    assert "PAYLOAD_SCHEMA_INVALID" in error_text(bad) and "/amount" in error_text(bad)


async def test_over_stdio_a_proposal_goes_from_tool_call_to_applied(stage: Stage) -> None:
    async with over_stdio(stage, stage.world.agent) as session:
        await round_trip(stage, session)


async def test_over_http_a_proposal_goes_from_tool_call_to_applied(stage: Stage) -> None:
    async with over_http(stage, stage.world.agent) as session:
        await round_trip(stage, session)


async def test_a_token_without_the_agent_role_is_refused(stage: Stage) -> None:
    async with over_stdio(stage, stage.world.reviewers[0]) as session:
        refused = await session.call_tool("list_targets", {})
        assert "FORBIDDEN" in error_text(refused) and "agent" in error_text(refused)
