"""``/readyz`` tells a busy SQLite database from an unreachable one, and reads go on.

Another process holding the write lock (``BEGIN IMMEDIATE``) is not an outage: the
database answers, it is busy. ``/readyz`` must say so within a few seconds instead of
waiting out the 30 s busy timeout and calling the database unreachable, and a
read-only query must still be answered (SQLite in WAL mode lets readers through).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from signoff.database import SessionMaker
from signoff.models import Role
from tests.conftest import PG_URL
from tests.live import Server, http_gql, server_log_on_failure

Serve = Callable[..., Awaitable[Server]]

pytestmark = pytest.mark.skipif(PG_URL is not None, reason="the SQLite write lock")

ANSWER_WITHIN = 5.0  # a few seconds, far below the 30 s busy timeout
GIVE_UP_AFTER = 10.0
VIEWER = "query { viewer { actor { name } } }"


def take_write_lock(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def release_write_lock(conn: sqlite3.Connection) -> None:
    conn.execute("ROLLBACK")
    conn.close()


async def timed(request: Awaitable[httpx.Response]) -> tuple[float, httpx.Response | None]:
    """How long ``request`` took, and its response (None: no answer within GIVE_UP_AFTER)."""
    started = time.monotonic()
    try:
        response: httpx.Response | None = await request
    except httpx.TimeoutException:
        response = None
    return time.monotonic() - started, response


def describe(elapsed: float, response: httpx.Response | None) -> str:
    if response is None:
        return f"no answer within {elapsed:.1f} s"
    return f"HTTP {response.status_code} after {elapsed:.1f} s: {response.text}"


async def test_readyz_reports_a_busy_database_and_reads_still_answer(
    serve: Serve, sessionmaker: SessionMaker, database_url: str
) -> None:
    server = await serve()
    with server_log_on_failure(server):
        path = make_url(database_url).database
        assert path is not None
        async with http_gql(server, sessionmaker) as gql:
            token = await gql.token(Role.REVIEWER, name="reader")
        async with httpx.AsyncClient(base_url=server.url, timeout=GIVE_UP_AFTER) as http:
            headers = {"Authorization": f"Bearer {token}"}
            assert (await http.get("/readyz")).json() == {"status": "ok", "database": "ok"}

            lock = await asyncio.to_thread(take_write_lock, path)
            try:
                (ready_after, ready), (read_after, read) = await asyncio.gather(
                    timed(http.get("/readyz")),
                    timed(http.post("/graphql", json={"query": VIEWER}, headers=headers)),
                )
            finally:
                await asyncio.to_thread(release_write_lock, lock)

            problems = []
            if not (
                ready is not None
                and ready_after < ANSWER_WITHIN
                and ready.status_code == 503
                and ready.json() == {"status": "unavailable", "database": "busy"}
            ):
                problems.append(
                    f"/readyz while the write lock is held: {describe(ready_after, ready)}"
                )
            body: dict[str, Any] = {} if read is None else read.json()
            if not (
                read is not None
                and read_after < ANSWER_WITHIN
                and not body.get("errors")
                and body["data"] == {"viewer": {"actor": {"name": "reader"}}}
            ):
                problems.append(
                    f"a read while the write lock is held: {describe(read_after, read)}"
                )
            assert not problems, "\n".join(problems)

            # The lock released, the database is ready again.
            for _ in range(int(ANSWER_WITHIN / 0.1)):
                again = await http.get("/readyz", timeout=ANSWER_WITHIN)
                if again.status_code == 200:
                    break
                await asyncio.sleep(0.1)
            assert again.json() == {"status": "ok", "database": "ok"}
