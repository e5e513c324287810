"""Graceful shutdown: on SIGTERM ``signoff serve`` with an open subscription and a request
in flight exits within 5 s, finishing the request and closing the websocket with 1001
("going away"), so clients know to reconnect elsewhere."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import psycopg
from sqlalchemy.engine import make_url
from websockets.exceptions import ConnectionClosed

from signoff.database import SessionMaker
from signoff.models import Role
from tests.helpers import CREATE_QUEUE
from tests.live import (
    QUEUE_EVENTS,
    Server,
    http_gql,
    open_transport_ws,
    server_log_on_failure,
)
from tests.log_lines import log_lines, problems

GOING_AWAY = 1001
EXIT_WITHIN_SECONDS = 5.0
HELD_AFTER_SIGTERM_SECONDS = 0.5


@contextlib.asynccontextmanager
async def queues_locked(database_url: str) -> AsyncIterator[None]:
    """Hold writes to the queues table (SQLite's write lock, or a PostgreSQL table lock), so
    that a createQueue is still in flight when the server is told to stop. Taken without
    blocking this event loop: a transaction of this process's own that is open meanwhile
    must be able to end, or each would wait for the other until SQLite's timeout."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        conn = sqlite3.connect(
            str(url.database), isolation_level=None, timeout=30, check_same_thread=False
        )
        try:
            await asyncio.to_thread(conn.execute, "BEGIN IMMEDIATE")
            try:
                yield
            finally:
                conn.execute("ROLLBACK")
        finally:
            conn.close()
        return
    plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(plain) as pg:
        await pg.execute("LOCK TABLE queues IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            await pg.rollback()


async def test_sigterm_finishes_requests_and_says_going_away(
    serve: Callable[..., Awaitable[Server]], sessionmaker: SessionMaker, database_url: str
) -> None:
    server = await serve()
    async with http_gql(server, sessionmaker) as gql:
        admin = await gql.token(Role.ADMIN)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        ws = await open_transport_ws(server.ws_url, {"authorization": f"Bearer {admin}"})
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": QUEUE_EVENTS}})
        )
        with server_log_on_failure(server, lines=30):
            async with queues_locked(database_url):
                request = asyncio.create_task(
                    http.post(
                        "/graphql",
                        json={
                            "query": CREATE_QUEUE,
                            "variables": {"input": {"slug": "late", "name": "Late"}},
                        },
                        headers={"Authorization": f"Bearer {admin}"},
                    )
                )
                await asyncio.sleep(0.5)
                assert not request.done()
                told = time.monotonic()
                server.process.send_signal(signal.SIGTERM)
                await asyncio.sleep(HELD_AFTER_SIGTERM_SECONDS)
        with server_log_on_failure(server, lines=30):
            response = await request
            assert response.status_code == 200
            assert response.json()["data"]["createQueue"]["name"] == "Late"
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), timeout=EXIT_WITHIN_SECONDS)
            except ConnectionClosed as closed:
                assert closed.rcvd is not None and closed.rcvd.code == GOING_AWAY
            while server.process.poll() is None:
                assert time.monotonic() - told < EXIT_WITHIN_SECONDS, "still running"
                await asyncio.sleep(0.05)
            # uvicorn re-raises the signal once it has shut down: the exit says SIGTERM.
            assert server.process.returncode in (0, -signal.SIGTERM)
            assert not problems(log_lines(server.log))
