"""Read sessions on PostgreSQL run outside a transaction: a read leaves none open (nothing
idle in transaction between two statements, no BEGIN or ROLLBACK to send), while a write
session still runs in one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import create_engine, create_sessionmaker, read_only
from tests.conftest import requires_postgres

pytestmark = requires_postgres


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _read_once(session: AsyncSession) -> psycopg.pq.TransactionStatus:
    """Run one statement on ``session``; then where its connection's transaction stands."""
    connection = await session.connection()
    await connection.execute(text("SELECT 1"))
    raw = await connection.get_raw_connection()
    driver: psycopg.AsyncConnection[object] = raw.driver_connection
    return driver.info.transaction_status


async def test_a_read_session_holds_no_transaction(engine: AsyncEngine) -> None:
    async with create_sessionmaker(read_only(engine))() as session:
        status = await _read_once(session)
    assert status is psycopg.pq.TransactionStatus.IDLE


async def test_a_write_session_runs_in_a_transaction(engine: AsyncEngine) -> None:
    async with create_sessionmaker(engine)() as session:
        status = await _read_once(session)
    assert status is psycopg.pq.TransactionStatus.INTRANS


async def test_the_pooled_connection_goes_back_to_transactions_after_a_read(
    engine: AsyncEngine,
) -> None:
    """One connection in the pool serves a read, then a write: the write is in a
    transaction again (the pool resets autocommit when the read gives it back)."""
    async with create_sessionmaker(read_only(engine))() as session:
        assert await _read_once(session) is psycopg.pq.TransactionStatus.IDLE
    async with create_sessionmaker(engine)() as session:
        assert await _read_once(session) is psycopg.pq.TransactionStatus.INTRANS
