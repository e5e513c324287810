"""Fixtures of the live-event tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import AsyncClient
from starlette.applications import Starlette

from tests.helpers import GraphQLClient
from tests.live import InProcessServer, serve_in_process


@pytest.fixture
async def live(app: Starlette) -> AsyncIterator[InProcessServer]:
    """The test's app served by uvicorn in the test's event loop, over real sockets."""
    async with serve_in_process(app) as server:
        yield server


@pytest.fixture
async def http(live: InProcessServer, gql: GraphQLClient) -> AsyncIterator[GraphQLClient]:
    """GraphQL over real HTTP to the ``live`` server, so that the app's event service
    publishes what a mutation changed to the subscribers the test opened."""
    async with AsyncClient(base_url=live.url, timeout=60) as client:
        yield GraphQLClient(client, gql.sessionmaker)
