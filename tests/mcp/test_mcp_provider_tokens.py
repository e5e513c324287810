"""``signoff-mcp`` with the identity provider's access token in ``SIGNOFF_TOKEN`` instead
of a Signoff token: an agent platform's workload identity (a client-credentials token from
a real OpenID provider) proposes through MCP, and Signoff names the provider's client as
the proposer. A token for another audience is a tool error carrying Signoff's code."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from signoff.database import SessionMaker
from tests.conftest import checked_once
from tests.helpers import build_world
from tests.live import Server, http_gql
from tests.mcp.test_mcp_server import error_text, structured
from tests.oidc.provider import OTHER_AUDIENCE, TestProvider

pytestmark = checked_once

Serve = Callable[..., Awaitable[Server]]
PROPOSER = "query($id: ID!) { proposal(id: $id) { state proposedBy { name role } } }"


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[TestProvider]:
    idp = TestProvider(tmp_path / "idp")
    idp.start()
    yield idp
    idp.stop()


def mcp_server(server: Server, token: str) -> StdioServerParameters:
    env = {**os.environ, "SIGNOFF_URL": server.url, "SIGNOFF_TOKEN": token}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "signoff_client.mcp_server"], env=env
    )


async def test_a_provider_token_proposes_through_mcp_as_its_client(
    serve: Serve, sessionmaker: SessionMaker, provider: TestProvider
) -> None:
    server = await serve(**provider.env())
    async with http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, reviewers=1)
        token = await provider.client_token("agent-payments")
        async with (
            stdio_client(mcp_server(server, token)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            targets = structured(await session.call_tool("list_targets", {}))["targets"]
            target = next(t for t in targets if t["id"] == world.target_id)
            proposed = structured(
                await session.call_tool(
                    "propose_action",
                    {"target": target["name"], "payload": {"amount": 40, "currency": "EUR"}},
                )
            )
        made = await gql(PROPOSER, {"id": proposed["proposal_id"]}, world.admin)
    assert made["proposal"] == {
        "state": "APPROVAL_REQUIRED",
        "proposedBy": {"name": "agent-payments", "role": "AGENT"},
    }


async def test_a_provider_token_for_another_audience_is_a_coded_tool_error(
    serve: Serve, sessionmaker: SessionMaker, provider: TestProvider
) -> None:
    server = await serve(**provider.env())
    token = await provider.client_token("agent-payments", resource=OTHER_AUDIENCE)
    async with (
        stdio_client(mcp_server(server, token)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        refused = await session.call_tool("list_targets", {})
    assert "IDENTITY_TOKEN_REFUSED" in error_text(refused)
