"""PostgreSQL lost under load (through a proxy the test cuts, as a restart drops every
connection): requests during the outage are refused ``SERVICE_UNAVAILABLE`` with a retry
hint, the server recovers by itself, nothing committed is lost, and the outage is one
log line, not an ERROR per request."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from signoff.config import normalise_database_url
from signoff.database import SessionMaker, create_engine
from tests.conftest import PG_URL, fresh_database, requires_postgres
from tests.faults.proxy import TcpProxy
from tests.faults.redis_server import RedisServer, requires_redis_server, worker_process
from tests.helpers import CREATE_QUEUE, GraphQLClient, build_world
from tests.jobs.test_crash import applied_count, approve_many, eventually
from tests.live import Server, server_log_on_failure, start_server
from tests.log_lines import log_lines, messages, problems
from tests.processes import run_cli, signoff_env
from tests.receivers import Receiver, serve

pytestmark = requires_postgres

CLIENTS = 4
BEFORE_CUT_SECONDS = 1.0
OUTAGE_SECONDS = 3.0
AFTER_RESTORE_SECONDS = 1.5


async def _create_queues(
    http: httpx.AsyncClient, token: str, client: int, stop: asyncio.Event, seen: Counter[str]
) -> list[str]:
    """Create queues one after another until told to stop, each retried under its key until
    it succeeds; return the slugs the server said it created."""
    created: list[str] = []
    for n in itertools.count():
        if stop.is_set():
            return created
        slug = f"c{client}-{n}"
        variables = {"input": {"slug": slug, "name": slug, "idempotencyKey": slug}}
        while True:
            body = await _post(http, token, variables)
            if not body.get("errors"):
                created.append(body["data"]["createQueue"]["slug"])
                break
            extensions: dict[str, Any] = body["errors"][0]["extensions"]
            seen[extensions["code"]] += 1
            assert extensions["code"] == "SERVICE_UNAVAILABLE", body
            assert extensions["retryAfter"] == 2
            await asyncio.sleep(0.2)  # shorter than the hint: the test has no time to spare
    return created


async def _post(http: httpx.AsyncClient, token: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(
        "/graphql",
        json={"query": CREATE_QUEUE, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _via(url: str, port: int) -> str:
    return make_url(url).set(port=port).render_as_string(hide_password=False)


def _stored(url: str) -> dict[str, tuple[int, int]]:
    """Each stored queue's slug, with its count of audit events and change events."""
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as conn:
        rows = conn.execute(
            """
            SELECT q.slug,
              (SELECT count(*) FROM audit_events a WHERE a.target_id = q.id),
              (SELECT count(*) FROM change_events e WHERE e.entity_id = q.id)
            FROM queues q
            """
        ).fetchall()
    return {slug: (audits, events) for slug, audits, events in rows}


async def _load_through_outage(server: Server, proxy: TcpProxy, token: str) -> list[str]:
    stop = asyncio.Event()
    seen: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        clients = [
            asyncio.create_task(_create_queues(http, token, n, stop, seen)) for n in range(CLIENTS)
        ]
        await asyncio.sleep(BEFORE_CUT_SECONDS)
        proxy.cut()
        await asyncio.sleep(OUTAGE_SECONDS)
        proxy.restore()
        await asyncio.sleep(AFTER_RESTORE_SECONDS)
        stop.set()
        results = await asyncio.gather(*clients)
    assert seen["SERVICE_UNAVAILABLE"] > 0, "no request met the outage"
    return [slug for created in results for slug in created]


async def test_a_database_outage_is_refused_retried_and_loses_nothing(tmp_path: Path) -> None:
    with fresh_database(tmp_path) as direct, _pg_proxy() as proxy:
        token = run_cli(
            "token", "create", "--name", "ops", "--role", "admin", env=signoff_env(direct)
        ).stdout.splitlines()[-1]
        server = await start_server(
            _via(direct, proxy.port),
            tmp_path,
            SIGNOFF_EMBEDDED_WORKER="0",
            SIGNOFF_LOG_LEVEL="info",
        )
        try:
            with server_log_on_failure(server, lines=30):
                created = await _load_through_outage(server, proxy, token)
                stored = _stored(direct)
                assert set(created) <= set(stored), "a queue the client saw created is missing"
                assert len(stored) == len(created), "a retry created a duplicate"
                assert all(counts == (1, 1) for counts in stored.values()), stored
                lines = log_lines(server.log)
                assert len(messages(lines, "database unreachable")) == 1, _outages(lines)
                assert len(messages(lines, "database reachable again")) == 1, _outages(lines)
                assert not problems(lines)
        finally:
            with contextlib.suppress(Exception):
                server.stop()


def _outages(lines: list[dict[str, Any]]) -> list[str]:
    """What the process said about outages, with when: the story behind a miscount."""
    outages = [line for line in lines if line["logger"] == "signoff.outages"]
    return [f"{line['time']} {line['message']}" for line in outages]


def _pg_proxy() -> TcpProxy:
    assert PG_URL is not None
    upstream = make_url(normalise_database_url(PG_URL))
    return TcpProxy(upstream.host or "127.0.0.1", upstream.port or 5432)


@requires_redis_server
async def test_the_worker_rides_out_a_database_outage(
    gql: GraphQLClient, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> None:
    """The worker reaches the database through the proxy; the API (this process) directly,
    so proposals approved during the outage commit and wait for the worker."""
    batch = 4
    with _pg_proxy() as proxy, RedisServer() as redis_server:
        via_proxy = _via(database_url, proxy.port)
        with worker_process(via_proxy, redis_server.url, tmp_path) as (process, log):
            async with serve(Receiver()) as receiver:
                world = await build_world(gql, url=receiver.url)
                receiver.secret = world.signing_secret
                await approve_many(world, batch)
                await eventually(lambda: applied_count(sessionmaker), 30, until=batch)

                proxy.cut()
                await approve_many(world, batch)
                await asyncio.sleep(OUTAGE_SECONDS)
                assert process.poll() is None, log.read_text()[-2000:]
                proxy.restore()

                await eventually(lambda: applied_count(sessionmaker), 30, until=2 * batch)
                assert len(receiver.applied) == 2 * batch
            lines = log_lines(log)
    assert len(messages(lines, "database unreachable")) == 1, _outages(lines)
    assert len(messages(lines, "database reachable again")) == 1, _outages(lines)
    assert not problems(lines)


async def test_a_connection_lost_in_an_outage_does_not_start_another_after_it(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A connection held through the outage fails when next used, after the database has
    answered again: that is the old outage showing, not a new one."""
    caplog.set_level(logging.INFO, logger="signoff.outages")
    with _pg_proxy() as proxy:
        engine = create_engine(_via(database_url, proxy.port))
        try:
            async with engine.connect() as held:
                await held.execute(text("SELECT 1"))
                proxy.cut()
                with pytest.raises(OperationalError):
                    async with engine.connect() as refused:
                        await refused.execute(text("SELECT 1"))
                proxy.restore()
                async with engine.connect() as fresh:
                    await fresh.execute(text("SELECT 1"))
                with pytest.raises(DBAPIError):
                    await held.execute(text("SELECT 1"))
            async with engine.connect() as after:
                await after.execute(text("SELECT 1"))
        finally:
            await engine.dispose()
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2, said
    assert said[0].startswith("database unreachable"), said
    assert said[1].startswith("database reachable again"), said
