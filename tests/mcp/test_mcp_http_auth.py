"""``signoff mcp --transport http`` serves nobody without a credential: each MCP client
sends its own bearer token, which Signoff checks and the tools forward, never the
``SIGNOFF_TOKEN`` in the server's environment (MCP authorization: protected resource
metadata, 401 with ``WWW-Authenticate``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from signoff.database import SessionMaker
from signoff.models import Role
from tests.client.conftest import Stage
from tests.conftest import checked_once
from tests.helpers import build_world
from tests.live import Server, http_gql
from tests.mcp.test_mcp_provider_tokens import provider as provider
from tests.mcp.test_mcp_server import bearer, error_text, structured
from tests.oidc.provider import OTHER_AUDIENCE, TestProvider
from tests.processes import free_port

pytestmark = checked_once

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "anyone", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
Serve = Callable[..., Awaitable[Server]]
PROPOSED_BY = "query($id: ID!) { proposal(id: $id) { proposedBy { name } } }"


@contextlib.asynccontextmanager
async def mcp_over_http(signoff_url: str, **env: str) -> AsyncIterator[str]:
    """``signoff mcp --transport http`` for the Signoff at ``signoff_url``; yields its /mcp
    URL."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *["-m", "signoff", "mcp", "--transport", "http", "--port", str(port)],
        env={**os.environ, "SIGNOFF_URL": signoff_url, **env},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        async with httpx.AsyncClient() as http:
            while True:
                assert process.returncode is None, "signoff mcp exited"
                with contextlib.suppress(httpx.TransportError):
                    await http.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource")
                    break
                assert time.monotonic() < deadline, "signoff mcp did not listen"
                await asyncio.sleep(0.1)
        yield url
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


@contextlib.asynccontextmanager
async def session_as(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        bearer(token) as http_client,
        streamable_http_client(url, http_client=http_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_no_request_is_served_without_a_credential(stage: Stage) -> None:
    # The setup the issue found: an agent's token in the server's environment.
    async with mcp_over_http(stage.server.url, SIGNOFF_TOKEN=stage.world.agent) as url:
        origin = url.removesuffix("/mcp")
        async with httpx.AsyncClient(headers=MCP_HEADERS) as http:
            for headers in ({}, {"authorization": "Bearer so_made_up"}):
                refused = await http.post(url, json=INITIALIZE, headers=headers)
                assert refused.status_code == 401, refused.text
                challenge = refused.headers["www-authenticate"]
                assert challenge.startswith("Bearer ")
                where = f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
                assert where in challenge
            metadata = (await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")).json()
    assert metadata["resource"] == url
    assert metadata["authorization_servers"] == [stage.server.url]


async def test_each_client_acts_as_its_own_token(stage: Stage) -> None:
    other_agent = await stage.gql.token(Role.AGENT, name="other-agent")
    async with mcp_over_http(stage.server.url, SIGNOFF_TOKEN=stage.world.agent) as url:
        async with session_as(url, stage.world.reviewers[0]) as reviewer:
            refused = await reviewer.call_tool("list_targets", {})
            assert "FORBIDDEN: your token is" in error_text(refused)
        async with session_as(url, other_agent) as agent:
            target = structured(await agent.call_tool("list_targets", {}))["targets"][0]["name"]
            arguments = {"target": target, "payload": {"amount": 10, "currency": "EUR"}}
            made = structured(await agent.call_tool("propose_action", arguments))
    read = await stage.gql(PROPOSED_BY, {"id": made["proposal_id"]}, stage.world.admin)
    assert read["proposal"]["proposedBy"] == {"name": "other-agent"}


async def test_an_identity_provider_token_is_forwarded_and_checked_by_signoff(
    serve: Serve, sessionmaker: SessionMaker, provider: TestProvider
) -> None:
    server = await serve(**provider.env())
    issuer = provider.env()["SIGNOFF_OIDC_ISSUER"]
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        async with mcp_over_http(server.url, SIGNOFF_MCP_AUTHORIZATION_SERVER=issuer) as url:
            async with httpx.AsyncClient() as http:
                where = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
                assert (await http.get(where)).json()["authorization_servers"] == [issuer]
                elsewhere = await provider.client_token("agent-payments", resource=OTHER_AUDIENCE)
                headers = {**MCP_HEADERS, "authorization": f"Bearer {elsewhere}"}
                refused = await http.post(url, json=INITIALIZE, headers=headers)
                assert refused.status_code == 401
            token = await provider.client_token("agent-payments")
            async with session_as(url, token) as session:
                target = structured(await session.call_tool("list_targets", {}))["targets"][0]
                arguments = {"target": target["name"], "payload": {"amount": 4, "currency": "EUR"}}
                made = structured(await session.call_tool("propose_action", arguments))
        read = await gql(PROPOSED_BY, {"id": made["proposal_id"]}, world.admin)
    assert read["proposal"]["proposedBy"] == {"name": "agent-payments"}
