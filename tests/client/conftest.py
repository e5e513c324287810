"""A real ``signoff serve`` that delivers (its embedded worker, or with Redis a
``signoff worker`` on its arq queue) to a real receiver on loopback, with a queue, a
target, an agent and two reviewers made through the API."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signoff.database import SessionMaker
from tests.helpers import GraphQLClient, World, build_world
from tests.live import Server, http_gql, server_log_on_failure
from tests.receivers import Receiver
from tests.receivers import serve as serve_receiver
from tests.redis_keys import unique_queue
from tests.test_readme import delivering

Serve = Callable[..., Awaitable[Server]]


@dataclass
class Stage:
    """The server, what the operator made on it, and the receiver it delivers to."""

    server: Server
    world: World
    gql: GraphQLClient
    receiver: Receiver
    database_url: str
    queue: str
    logs: Path

    async def proposal(self, proposal_id: str) -> dict[str, Any]:
        data = await self.gql(
            "query($id: ID!) { proposal(id: $id) { id state payloadDigest revision } }",
            {"id": proposal_id},
            self.world.admin,
        )
        found: dict[str, Any] = data["proposal"]
        return found

    async def decide(self, proposal_id: str, decision: str = "APPROVED", **extra: Any) -> None:
        proposal = await self.proposal(proposal_id)
        await self.world.decide(self.world.reviewers[0], proposal, decision, **extra)

    async def proposals_count(self) -> int:
        data = await self.gql("query { proposals { nodes { id } } }", {}, self.world.admin)
        return len(data["proposals"]["nodes"])


@pytest.fixture
async def stage(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> AsyncIterator[Stage]:
    async with staged(serve, sessionmaker, database_url, tmp_path) as made:
        yield made


@contextlib.asynccontextmanager
async def staged(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path, **target: Any
) -> AsyncIterator[Stage]:
    """A delivering server and its world; ``target`` overrides the target's fields."""
    queue = unique_queue()
    server = await serve(
        SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue, SIGNOFF_SWEEP_INTERVAL_SECONDS="1"
    )
    receiver = Receiver()
    async with serve_receiver(receiver), http_gql(server, sessionmaker) as gql:
        world = await build_world(
            gql, reviewers=2, url=receiver.url, amendmentsNeedProposer=True, **target
        )
        receiver.secret = world.signing_secret
        with delivering(database_url, queue, tmp_path), server_log_on_failure(server):
            yield Stage(server, world, gql, receiver, database_url, queue, tmp_path)
