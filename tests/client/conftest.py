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
from tests.conftest import ModuleServer, server_on_its_own_database
from tests.helpers import GraphQLClient, World, build_world, unique_name
from tests.live import Server, http_gql, server_log_on_failure
from tests.receivers import Answer, Receiver
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
    reviewer_names: str

    def reviewer_name(self, number: int) -> str:
        return f"{self.reviewer_names}-{number}"

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
        """The proposals of this stage's queue (others may share the database)."""
        data = await self.gql(
            "query($q: ID) { proposals(queueId: $q) { nodes { id } } }",
            {"q": self.world.queue_id},
            self.world.admin,
        )
        return len(data["proposals"]["nodes"])


@dataclass(frozen=True)
class DeliveringServer:
    """A delivering server shared by a module's tests, and its arq queue."""

    shared: ModuleServer
    queue: str


@pytest.fixture(scope="module")
async def delivering_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[DeliveringServer]:
    queue = unique_queue()
    directory = tmp_path_factory.mktemp("delivering-server")
    async with server_on_its_own_database(directory, **delivering_env(queue)) as shared:
        yield DeliveringServer(shared, queue)


@pytest.fixture
async def stage(delivering_server: DeliveringServer, tmp_path: Path) -> AsyncIterator[Stage]:
    """A world of the test's own (queue, target, reviewers, receiver) on the module's
    delivering server."""
    shared = delivering_server.shared
    async with staged_on(
        shared.server, shared.sessionmaker, shared.database_url, delivering_server.queue, tmp_path
    ) as made:
        yield made


# A target's output schema, and the answer its receiver gives in ``result_stage``.
REFUND_SCHEMA = {
    "type": "object",
    "required": ["refund_id"],
    "properties": {"refund_id": {"type": "string"}},
}
REFUND_ANSWER = {"refund_id": "r-1"}


@pytest.fixture
async def result_stage(delivering_server: DeliveringServer, tmp_path: Path) -> AsyncIterator[Stage]:
    """A stage whose target declares an output schema and whose receiver answers
    ``REFUND_ANSWER``, which meets it."""
    shared = delivering_server.shared
    async with staged_on(
        shared.server,
        shared.sessionmaker,
        shared.database_url,
        delivering_server.queue,
        tmp_path,
        outputSchema=REFUND_SCHEMA,
    ) as made:
        made.receiver.script = [Answer(200, body=REFUND_ANSWER)]
        yield made


@pytest.fixture
async def agent_stage(delivering_server: DeliveringServer, tmp_path: Path) -> AsyncIterator[Stage]:
    """A stage whose target has no url: its agents execute approved proposals themselves."""
    shared = delivering_server.shared
    async with staged_on(
        shared.server,
        shared.sessionmaker,
        shared.database_url,
        delivering_server.queue,
        tmp_path,
        url=None,
    ) as made:
        yield made


@pytest.fixture
async def own_stage(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> AsyncIterator[Stage]:
    """A stage whose delivering server is the test's alone (to stop and start it)."""
    async with staged(serve, sessionmaker, database_url, tmp_path) as made:
        yield made


def delivering_env(queue: str) -> dict[str, str]:
    return {
        "SIGNOFF_EMBEDDED_WORKER": "1",
        "SIGNOFF_ARQ_QUEUE": queue,
        "SIGNOFF_SWEEP_INTERVAL_SECONDS": "1",
    }


@contextlib.asynccontextmanager
async def staged(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path, **target: Any
) -> AsyncIterator[Stage]:
    """A delivering server of its own and its world; ``target`` overrides the target's
    fields."""
    queue = unique_queue()
    server = await serve(**delivering_env(queue))
    async with staged_on(server, sessionmaker, database_url, queue, tmp_path, **target) as made:
        yield made


@contextlib.asynccontextmanager
async def staged_on(
    server: Server,
    sessionmaker: SessionMaker,
    database_url: str,
    queue: str,
    tmp_path: Path,
    **target: Any,
) -> AsyncIterator[Stage]:
    """A world on ``server`` (reviewers named apart) delivering to a receiver of its own."""
    receiver, names = Receiver(), unique_name("reviewer")
    async with serve_receiver(receiver), http_gql(server, sessionmaker) as gql:
        world = await build_world(
            gql,
            reviewers=2,
            url=target.pop("url", receiver.url),
            amendmentsNeedProposer=True,
            reviewer_names=names,
            **target,
        )
        receiver.secret = world.signing_secret
        with delivering(database_url, queue, tmp_path), server_log_on_failure(server):
            yield Stage(server, world, gql, receiver, database_url, queue, tmp_path, names)
