"""``signoff serve`` killed with SIGKILL in the middle of a burst of mutations: every one the
client saw succeed is in the database, with its audit record and its change event."""

from __future__ import annotations

import asyncio
import itertools
import signal
from collections.abc import Awaitable, Callable

import httpx
from sqlalchemy import text

from signoff.database import SessionMaker
from signoff.models import Role
from tests.helpers import CREATE_QUEUE, GraphQLClient
from tests.jobs.test_crash import eventually
from tests.live import Server

CLIENTS = 6
KILL_AFTER = 40


async def _burst(http: httpx.AsyncClient, token: str, client: int, seen: list[str]) -> None:
    """Create queues until the server is gone; note each one the server said it created."""
    for n in itertools.count():
        slug = f"k{client}-{n}"
        try:
            response = await http.post(
                "/graphql",
                json={"query": CREATE_QUEUE, "variables": {"input": {"slug": slug, "name": slug}}},
                headers={"Authorization": f"Bearer {token}"},
            )
        except httpx.TransportError:
            return
        body = response.json()
        assert not body.get("errors"), body
        seen.append(body["data"]["createQueue"]["id"])


async def _recorded(sessionmaker: SessionMaker) -> dict[str, tuple[int, int]]:
    async with sessionmaker() as session:
        connection = await session.connection()
        rows = await connection.execute(
            text(
                """
                SELECT q.id,
                  (SELECT count(*) FROM audit_events a WHERE a.target_id = q.id),
                  (SELECT count(*) FROM change_events e WHERE e.entity_id = q.id)
                FROM queues q
                """
            )
        )
        return {queue_id: (audits, events) for queue_id, audits, events in rows}


async def test_every_mutation_seen_to_succeed_survives_a_sigkill(
    serve: Callable[..., Awaitable[Server]], gql: GraphQLClient, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    admin = await gql.token(Role.ADMIN)
    seen: list[str] = []
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        clients = [asyncio.create_task(_burst(http, admin, n, seen)) for n in range(CLIENTS)]
        await eventually(lambda: len(seen) >= KILL_AFTER, 30)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        await asyncio.gather(*clients)
    recorded = await _recorded(sessionmaker)
    missing = [queue_id for queue_id in seen if queue_id not in recorded]
    assert not missing, f"{len(missing)} of {len(seen)} acknowledged queues are missing"
    assert all(recorded[queue_id] == (1, 1) for queue_id in seen), recorded
