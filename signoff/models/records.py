"""Records: a row's columns as attributes, standing in for a model instance where a
row is only read.

Read paths (a page of proposals, the DataLoaders behind nested fields) read a model's
columns and nothing else. An ORM instance costs three times as much to build and read
(identity map, instrumented attributes), and a Core ``Row`` is slower to read than
either; on a page of 20 proposals with their targets, approvals and tasks that was a
fifth of the request. A record is read-only by convention: never add it to a session.

Reads by key (``rows_where``, ``read_all``) on a PostgreSQL connection in autocommit
(the read sessions) go to psycopg directly, several in one round trip (a pipeline):
SQLAlchemy's execution around a statement cost about as much as psycopg's own, and a
page's relations are independent reads that need not wait for each other. They keep
what SQLAlchemy gives: the same statement text, the same values (its result
processors run on every row), ``before_cursor_execute`` listeners (metrics, tests that
count statements). A failure is not handled here: the reads run again through
SQLAlchemy, whose error handling (wrapping, the outage log, replacing a broken
connection) then applies as to any other statement.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from sqlalchemy import Dialect, Result, Select, Table, any_, bindparam
from sqlalchemy import select as select_rows
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

M = TypeVar("M", bound=SQLModel)


class Record:
    """A row's columns as attributes."""

    __slots__ = ("__dict__",)


def records(model: type[M], result: Result[Any]) -> list[M]:
    """``result``'s rows (selected from ``model``'s table) as records of ``model``."""
    columns = list(result.keys())
    found: list[Any] = []
    for row in result:
        record = Record.__new__(Record)
        record.__dict__ = dict(zip(columns, row, strict=True))
        found.append(record)
    return found


def table_of(model: type[SQLModel]) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


@dataclass(frozen=True)
class Via:
    """Keys reached through another table: its ``pick`` column in its rows whose
    ``column`` is one of the keys (the approvers of proposals: ``Via(Approval,
    "approver_id", "proposal_id")``), so that a read need not wait for another."""

    model: type[SQLModel]
    pick: str
    column: str


@dataclass(frozen=True)
class RowsWhere:
    """A read of the ``model`` rows whose ``column`` is one of ``keys`` (or, with
    ``via``, one of the values ``via`` reaches from ``keys``)."""

    model: type[SQLModel]
    column: str
    keys: Sequence[str]
    order_by: str | None = None
    via: Via | None = None


async def rows_where(
    session: AsyncSession,
    model: type[M],
    column: str,
    keys: Sequence[str],
    order_by: str | None = None,
) -> list[M]:
    """Records of the ``model`` rows whose ``column`` is one of ``keys``."""
    (found,) = await read_all(session, [RowsWhere(model, column, keys, order_by)])
    return found


async def read_all(session: AsyncSession, reads: Sequence[RowsWhere]) -> list[list[Any]]:
    """The records of each of ``reads``, in one round trip where the connection allows."""
    connection = await session.connection()
    if connection.dialect.name == "postgresql":
        found = await _pipelined(connection, reads)
        if found is not None:
            return found
    return [await _through_sqlalchemy(connection, read) for read in reads]


async def _through_sqlalchemy(connection: AsyncConnection, read: RowsWhere) -> list[Any]:
    stmt = _rows_with(read.model, read.column, read.order_by, read.via, connection.dialect.name)
    return records(read.model, await connection.execute(stmt, {"keys": list(read.keys)}))


async def _pipelined(
    connection: AsyncConnection, reads: Sequence[RowsWhere]
) -> list[list[Any]] | None:
    """``reads`` through psycopg in one pipeline, or None where that cannot be done
    safely (not in autocommit) or failed (then nothing was kept: the caller reads again)."""
    raw = await connection.get_raw_connection()
    driver: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
    idle = driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    if not (driver.autocommit and idle):
        return None
    plans = [_plan_of(read, connection.dialect) for read in reads]
    parameters = [{"keys": list(read.keys)} for read in reads]
    cursors = [driver.cursor() for _ in plans]
    sync = connection.sync_connection
    assert sync is not None  # an AsyncConnection from a session is started
    for cursor, plan, params in zip(cursors, plans, parameters, strict=True):
        sync.dispatch.before_cursor_execute(sync, cursor, plan.sql, params, None, False)
    try:
        rows = await _fetch_all(cursors, plans, parameters)
    except psycopg.Error:
        return None
    except BaseException:
        # Cancelled mid-pipeline: the connection's protocol state is unknown, so the pool
        # must not hand it out again.
        await connection.invalidate()
        raise
    return [
        plan.records(found, cursor)
        for plan, found, cursor in zip(plans, rows, cursors, strict=True)
    ]


async def _fetch_all(
    cursors: Sequence[psycopg.AsyncCursor[Any]],
    plans: Sequence[_Plan],
    parameters: Sequence[dict[str, Any]],
) -> list[list[Any]]:
    if len(plans) == 1:
        await cursors[0].execute(plans[0].sql, parameters[0])
    else:
        async with cursors[0].connection.pipeline():
            for cursor, plan, params in zip(cursors, plans, parameters, strict=True):
                await cursor.execute(plan.sql, params)
    return [await cursor.fetchall() for cursor in cursors]


class _Plan:
    """One kind of read by key, compiled once: its text, its columns, and the result
    processors SQLAlchemy would run on them (known from the first result's types)."""

    def __init__(self, read: RowsWhere, dialect: Dialect) -> None:
        stmt = _rows_with(read.model, read.column, read.order_by, read.via, dialect.name)
        self.sql = str(stmt.compile(dialect=dialect))
        self._columns = list(table_of(read.model).columns)
        self._names = [column.key for column in self._columns]
        self._dialect = dialect
        self._processors: list[tuple[int, Callable[[Any], Any]]] | None = None

    def records(self, rows: list[Any], cursor: psycopg.AsyncCursor[Any]) -> list[Any]:
        processors = self._processors
        if processors is None:
            processors = self._processors = self._processors_for(cursor)
        names = self._names
        found: list[Any] = []
        for row in rows:
            values = dict(zip(names, row, strict=True))
            for index, process in processors:
                name = names[index]
                values[name] = process(values[name])
            record = Record.__new__(Record)
            record.__dict__ = values
            found.append(record)
        return found

    def _processors_for(
        self, cursor: psycopg.AsyncCursor[Any]
    ) -> list[tuple[int, Callable[[Any], Any]]]:
        description = cursor.description
        assert description is not None and len(description) == len(self._columns)
        found: list[tuple[int, Callable[[Any], Any]]] = []
        for index, (column, described) in enumerate(zip(self._columns, description, strict=True)):
            impl = column.type.dialect_impl(self._dialect)
            process = impl.result_processor(self._dialect, described.type_code)
            if process is not None:
                found.append((index, process))
        return found


# Plans by (model, column, order, via, dialect class): the class decides the text and the
# processors, and the cache keeps no engine alive.
_PLANS: dict[tuple[type[SQLModel], str, str | None, Via | None, type[Dialect]], _Plan] = {}


def _plan_of(read: RowsWhere, dialect: Dialect) -> _Plan:
    kind = (read.model, read.column, read.order_by, read.via, type(dialect))
    plan = _PLANS.get(kind)
    if plan is None:
        plan = _PLANS[kind] = _Plan(read, dialect)
    return plan


@functools.cache
def _rows_with(
    model: type[SQLModel], column: str, order_by: str | None, via: Via | None, dialect: str
) -> Select[Any]:
    """``model`` rows whose ``column`` is one of the ``keys`` parameter (or of what
    ``via`` reaches from them): built once per loader kind, as building and keying a
    statement cost a third of its execution.

    On PostgreSQL the keys travel as one array (``= ANY(:keys)``): one statement text
    whatever their number, which the server prepares once, where ``IN (:k1, :k2, …)``
    is rendered anew for each number of keys.
    """
    table = table_of(model)
    keyed = table if via is None else table_of(via.model)
    key_column = keyed.c[column if via is None else via.column]
    if dialect == "postgresql":
        keys = bindparam("keys", type_=postgresql.ARRAY(key_column.type))
        match = key_column == any_(keys)
    else:
        match = key_column.in_(bindparam("keys", expanding=True))
    if via is None:
        stmt = select_rows(table).where(match)
    else:
        stmt = select_rows(table).where(
            table.c[column].in_(select_rows(keyed.c[via.pick]).where(match))
        )
    if order_by is not None:
        stmt = stmt.order_by(table.c[order_by])
    return stmt
