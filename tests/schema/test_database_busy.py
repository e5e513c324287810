"""A busy database: reads go on, writes are refused with DATABASE_BUSY and change nothing,
and the log names the condition without SQL."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy.engine import make_url
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.database import SessionMaker, database_condition
from signoff.models import Role
from signoff.schema.errors import describe
from signoff.web.app import create_app
from tests.conftest import PG_URL
from tests.helpers import CREATE_QUEUE, GraphQLClient

pytestmark = pytest.mark.skipif(PG_URL is not None, reason="SQLite's write lock")

QUEUES = "query { queues { slug } }"


@pytest.fixture
async def impatient_app(settings: Settings, clean_database: None) -> AsyncIterator[Starlette]:
    """The app with a 300 ms busy timeout, so a held lock is answered quickly."""
    app = create_app(dataclasses.replace(settings, sqlite_busy_timeout_ms=300))
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def impatient(
    impatient_app: Starlette, sessionmaker: SessionMaker
) -> AsyncIterator[GraphQLClient]:
    transport = ASGITransport(app=impatient_app)
    async with AsyncClient(transport=transport, base_url="http://signoff.test") as http:
        yield GraphQLClient(http, sessionmaker)


@pytest.fixture
def write_lock(database_url: str) -> Iterator[sqlite3.Connection]:
    """Another process's writer, holding SQLite's write lock until the test releases it. Its
    BEGIN goes through a thread (``check_same_thread=False``): waiting on the event loop
    would stop the app's own transaction in flight from ending, each waiting for the other."""
    holder = sqlite3.connect(
        make_url(database_url).database or "", isolation_level=None, check_same_thread=False
    )
    yield holder
    if holder.in_transaction:
        holder.execute("ROLLBACK")
    holder.close()


async def test_a_locked_database_refuses_writes_with_database_busy_and_keeps_reading(
    impatient: GraphQLClient, write_lock: sqlite3.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    admin = await impatient.token(Role.ADMIN, name="admin")
    with caplog.at_level(logging.WARNING, logger="signoff"):
        await asyncio.to_thread(write_lock.execute, "BEGIN IMMEDIATE")
        error = await impatient.error(
            CREATE_QUEUE, {"input": {"slug": "busy", "name": "Busy"}}, admin
        )
        read = await impatient(QUEUES, token=admin)
        write_lock.execute("ROLLBACK")
    assert error.code == "DATABASE_BUSY"
    assert "Try again" in error.errors[0]["message"]
    assert read == {"queues": []}
    assert "database is locked" in caplog.text
    assert "INSERT" not in caplog.text
    assert await impatient(QUEUES, token=admin) == {"queues": []}  # nothing was created
    created = await impatient(CREATE_QUEUE, {"input": {"slug": "busy", "name": "B"}}, admin)
    assert created["createQueue"]["slug"] == "busy"


def test_database_errors_are_described_by_condition_never_by_message() -> None:
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("SELECT secret FROM nowhere WHERE password = 'hunter2'")
    except sqlite3.OperationalError as exc:
        error = exc
    connection.close()
    assert database_condition(error) == "SQLITE_ERROR"
    assert "hunter2" not in describe(error) and "nowhere" not in describe(error)
