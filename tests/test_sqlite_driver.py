"""SQLite's one-trip cursor (``signoff.sqlite_driver``): what SQLAlchemy reads from a
cursor is what the stock adapter gives, errors are the same errors, and a statement
makes one trip to the connection's thread."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.database import create_engine, create_sessionmaker, is_busy, read_only
from signoff.sqlite_driver import OneTripDBAPI
from tests.conftest import PG_URL

pytestmark = pytest.mark.skipif(PG_URL is not None, reason="SQLite's driver")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "driver.db"


@pytest.fixture
async def engine(path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{path}", busy_timeout_ms=200)
    async with engine.begin() as conn:
        await conn.execute(
            text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT UNIQUE, size INTEGER)")
        )
    yield engine
    await engine.dispose()


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call that aiosqlite runs on a connection's thread, by name."""
    made: list[str] = []
    run = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(getattr(fn, "__name__", repr(fn)))
        return await run(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    yield made


async def test_the_engine_uses_the_one_trip_driver(engine: AsyncEngine) -> None:
    assert isinstance(engine.sync_engine.dialect.dbapi, OneTripDBAPI)


async def test_rows_columns_rowcount_and_lastrowid_read_as_from_sqlite3(
    engine: AsyncEngine,
) -> None:
    async with engine.begin() as conn:
        inserted = await conn.execute(
            text("INSERT INTO items (name, size) VALUES (:n, :s)"), {"n": "a", "s": 1}
        )
        assert inserted.lastrowid == 1
        assert inserted.rowcount == 1
        many = await conn.execute(
            text("INSERT INTO items (name, size) VALUES (:n, :s)"),
            [{"n": "b", "s": 2}, {"n": "c", "s": 3}, {"n": "d", "s": None}],
        )
        assert many.rowcount == 3
        updated = await conn.execute(text("UPDATE items SET size = size + 10 WHERE size > 1"))
        assert updated.rowcount == 2

        result = await conn.execute(text("SELECT id, name, size FROM items ORDER BY id"))
        assert list(result.keys()) == ["id", "name", "size"]
        assert [tuple(row) for row in result] == [
            (1, "a", 1),
            (2, "b", 12),
            (3, "c", 13),
            (4, "d", None),
        ]
        first = await conn.execute(text("SELECT name FROM items ORDER BY id"))
        assert first.scalar() == "a"  # the first row's first column; the rest is dropped
        partial = await conn.execute(text("SELECT name FROM items ORDER BY id"))
        assert partial.fetchmany(2) == [("a",), ("b",)]
        assert partial.fetchone() == ("c",)
        assert partial.fetchall() == [("d",)]
        returned = await conn.execute(
            text("UPDATE items SET size = 0 WHERE name IN ('a', 'b') RETURNING name")
        )
        assert sorted(returned.scalars()) == ["a", "b"]
        empty = await conn.execute(text("SELECT name FROM items WHERE size > 100"))
        assert empty.all() == []


async def test_a_constraint_violation_is_sqlalchemys_integrity_error_and_leaves_nothing(
    engine: AsyncEngine,
) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO items (name) VALUES ('a')"))
    with pytest.raises(IntegrityError, match="UNIQUE constraint failed"):
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO items (name) VALUES ('b')"))
            await conn.execute(text("INSERT INTO items (name) VALUES ('a')"))
    async with engine.connect() as conn:
        names = (await conn.execute(text("SELECT name FROM items"))).scalars().all()
    assert names == ["a"]


async def test_a_held_write_lock_is_reported_as_busy(engine: AsyncEngine, path: Path) -> None:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(OperationalError) as refused:
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO items (name) VALUES ('late')"))
        assert is_busy(refused.value)
        async with read_only(engine).connect() as conn:  # readers go on meanwhile
            assert (await conn.execute(text("SELECT count(*) FROM items"))).scalar() == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_a_statement_makes_one_trip_to_the_connections_thread(
    engine: AsyncEngine, trips: list[str]
) -> None:
    async with engine.begin() as conn:  # BEGIN IMMEDIATE, then three statements, COMMIT
        await conn.execute(text("INSERT INTO items (name) VALUES ('a')"))
        await conn.execute(text("INSERT INTO items (name) VALUES (:n)"), [{"n": "b"}, {"n": "c"}])
        rows = (await conn.execute(text("SELECT name FROM items ORDER BY id"))).all()
    assert [row.name for row in rows] == ["a", "b", "c"]
    assert trips == ["_run_whole"] * 4 + ["commit"]


async def test_a_read_only_session_sends_only_its_statements(
    engine: AsyncEngine, trips: list[str]
) -> None:
    """No BEGIN, and no COMMIT or ROLLBACK for a transaction that was never opened."""
    sessions = create_sessionmaker(read_only(engine))
    async with sessions() as session:
        conn = await session.connection()
        await conn.execute(text("SELECT count(*) FROM items"))
        await conn.execute(text("SELECT name FROM items"))
        await session.commit()
    assert trips == ["_run_whole"] * 2
