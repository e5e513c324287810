"""Pooled PostgreSQL connections.

A connection is pinged before use only after sitting idle: one the server dropped
meanwhile is replaced without the caller seeing an error, and one in steady use costs no
round trip more. Read sessions run outside a transaction (nothing idle in transaction
between two statements, no BEGIN or ROLLBACK to send); write sessions still run in one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import database
from signoff.database import create_engine, create_sessionmaker, read_only
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


async def _read_once(session: AsyncSession) -> psycopg.pq.TransactionStatus:
    """Run one statement on ``session``; then where its connection's transaction stands."""
    connection = await session.connection()
    await connection.execute(text("SELECT 1"))
    raw = await connection.get_raw_connection()
    driver: psycopg.AsyncConnection[object] = raw.driver_connection
    return driver.info.transaction_status


async def test_a_read_session_holds_no_transaction(one_connection: AsyncEngine) -> None:
    async with create_sessionmaker(read_only(one_connection))() as session:
        status = await _read_once(session)
    assert status is psycopg.pq.TransactionStatus.IDLE


async def test_a_write_session_runs_in_a_transaction(one_connection: AsyncEngine) -> None:
    async with create_sessionmaker(one_connection)() as session:
        status = await _read_once(session)
    assert status is psycopg.pq.TransactionStatus.INTRANS


async def test_the_pooled_connection_goes_back_to_transactions_after_a_read(
    one_connection: AsyncEngine,
) -> None:
    """One connection in the pool serves a read, then a write: the write is in a
    transaction again (the pool resets autocommit when the read gives it back)."""
    async with create_sessionmaker(read_only(one_connection))() as session:
        assert await _read_once(session) is psycopg.pq.TransactionStatus.IDLE
    async with create_sessionmaker(one_connection)() as session:
        assert await _read_once(session) is psycopg.pq.TransactionStatus.INTRANS


async def test_every_session_is_in_utc_without_a_startup_parameter(
    one_connection: AsyncEngine, database_url: str
) -> None:
    """Records take timestamps as psycopg loads them when the session is in UTC, so each
    new connection sets it: with a ``SET`` that a rollback does not undo, not with a
    startup ``options`` parameter, which PgBouncer refuses (the server's own zone here may
    be another name for UTC, which psycopg loads as another tzinfo)."""
    async with one_connection.connect() as conn:
        await conn.rollback()
        zone = (await conn.execute(text("SHOW TimeZone"))).scalar_one()
        raw = await conn.get_raw_connection()
        assert "options" not in raw.driver_connection.info.get_parameters()
    assert zone == "UTC"
    async with read_only(one_connection).connect() as conn:  # autocommit reads too
        loaded = (await conn.execute(text("SELECT now()"))).scalar_one()
    assert loaded.tzinfo is UTC
