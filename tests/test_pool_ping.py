"""Pooled PostgreSQL connections are pinged before use only after sitting idle: a
connection the server dropped meanwhile is replaced without the caller seeing an error,
and a connection in steady use costs no round trip more."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff import database
from signoff.database import create_engine
from tests.conftest import requires_postgres

pytestmark = requires_postgres


@pytest.fixture
async def one_connection(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        pid: int = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    return pid


def _terminate(database_url: str, pid: int) -> None:
    plain = make_url(database_url).set(drivername="postgresql")
    with psycopg.connect(plain.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


async def test_a_connection_dropped_while_idle_is_replaced_unseen(
    one_connection: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "PING_AFTER_IDLE_SECONDS", 0.0)
    dropped = await _backend_pid(one_connection)
    _terminate(database_url, dropped)
    assert await _backend_pid(one_connection) != dropped


async def test_a_connection_in_steady_use_is_not_pinged(
    one_connection: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a ping the statement meets the dropped connection itself: the proof that
    none was sent. The pool then replaces it for the next caller."""
    monkeypatch.setattr(database, "PING_AFTER_IDLE_SECONDS", 3600.0)
    dropped = await _backend_pid(one_connection)
    _terminate(database_url, dropped)
    with pytest.raises(DBAPIError) as refused:
        await _backend_pid(one_connection)
    assert refused.value.connection_invalidated
    assert await _backend_pid(one_connection) != dropped
