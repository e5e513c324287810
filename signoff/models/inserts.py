"""Inserts of rows with every column given, compiled once per table and row count.

On PostgreSQL, in a write transaction, they go to psycopg directly with SQLAlchemy's
compiled text and bind processors (a refusal raised as SQLAlchemy raises it): small
batches of several tables as one statement (data-modifying ``WITH`` parts), or inside
the statement they precede where it reads none of their tables; past ``MAX_ROWS`` rows
each column as the text of an array (``unnest``, ``arrays.array_values``). Elsewhere,
and for rows that leave a column out, through SQLAlchemy (docs/design.md section 12).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from signoff.models.arrays import array_values
from signoff.models.records import (
    IDLE,
    WRITING,
    RecordSelect,
    autocommitted,
    driver_of,
    raise_as_sqlalchemy,
    select_all_on,
    selected_after,
    tables_read,
)

Rows = Sequence[Mapping[str, Any]]


async def insert_rows(
    connection: AsyncConnection, batches: Sequence[tuple[sa.Table, Rows]]
) -> None:
    """Insert each table's rows, in the order given: in one statement where each table's
    batch is small (``MAX_ROWS``), else one statement per table."""
    batches = [(table, rows) for table, rows in batches if rows]
    if not batches:
        return
    driver = await _writing_driver(connection, batches)
    if driver is None:
        for table, rows in batches:
            await connection.execute(sa.insert(table), list(rows))
        return
    await _send(connection, driver, _statements(batches, connection.dialect))


async def insert_alone(
    connection: AsyncConnection, batches: Sequence[tuple[sa.Table, Rows]]
) -> bool:
    """Insert each table's rows (``insert_rows``) as one statement committed on its own,
    where the session's transaction has sent nothing yet and they make one statement
    (PostgreSQL): atomic as any statement is, with no ``BEGIN`` and no ``COMMIT``. False,
    with nothing sent, where they cannot go so."""
    batches = [(table, rows) for table, rows in batches if rows]
    if not batches:
        return False
    driver = await _writing_driver(connection, batches)
    if driver is None or driver.info.transaction_status != IDLE:
        return False
    statements = _statements(batches, connection.dialect)
    if len(statements) != 1:
        return False
    async with autocommitted(connection, driver):
        await _send(connection, driver, statements)
    return True


async def _send(
    connection: AsyncConnection,
    driver: psycopg.AsyncConnection[Any],
    statements: Sequence[tuple[str, Sequence[Any]]],
) -> None:
    """``statements`` through psycopg's raw cursor, in one pipeline if several; a refusal
    raised as SQLAlchemy raises it."""
    sync = connection.sync_connection
    assert sync is not None  # an AsyncConnection from a session is started
    cursor = psycopg.AsyncRawCursor(driver)
    for sql, params in statements:
        sync.dispatch.before_cursor_execute(sync, cursor, sql, params, None, False)
    try:
        if len(statements) == 1:
            await cursor.execute(*statements[0])
        else:
            async with driver.pipeline():
                for sql, params in statements:
                    await cursor.execute(sql, params)
    except psycopg.Error as failed:
        await connection.run_sync(raise_as_sqlalchemy, failed, *statements[0])
        raise  # not reached: the line above raises
    except BaseException:
        # Cancelled mid-statement: the connection's protocol state is unknown.
        await connection.invalidate()
        raise


async def insert_then_select(
    connection: AsyncConnection,
    batches: Sequence[tuple[sa.Table, Rows]],
    selects: Sequence[RecordSelect],
) -> list[list[Any]]:
    """Insert each table's rows (``insert_rows``), then read the records of each of
    ``selects`` (``select_all``), in one round trip where the connection allows: a read,
    or an ``UPDATE … RETURNING``, that must come after the rows but need not wait for an
    answer to them. Where the first reads none of the rows' tables, the rows go in its
    statement. A refused row is raised as SQLAlchemy raises it, and nothing after it
    runs."""
    batches = [(table, rows) for table, rows in batches if rows]
    if not selects:
        await insert_rows(connection, batches)
        return []
    if batches and await _writing_driver(connection, batches) is not None:
        dialect = connection.dialect
        first, *rest = selects
        if _may_lead(batches, first, dialect):
            found = await selected_after(connection, [], [_after(batches, first, dialect), *rest])
        else:
            found = await selected_after(connection, _statements(batches, dialect), selects)
        if found is not None:
            return found
    await insert_rows(connection, batches)
    return await select_all_on(connection, selects)


def _statements(
    batches: Sequence[tuple[sa.Table, Rows]], dialect: Dialect
) -> list[tuple[str, list[Any]]]:
    """The statements that insert ``batches``, with their parameters as psycopg's raw
    cursors take them: one for them all where each is small, else one per table."""
    if len(batches) > 1 and all(len(rows) <= MAX_ROWS for _, rows in batches):
        keys = tuple((table, len(rows)) for table, rows in batches)
        together = _TOGETHER.get((keys, type(dialect)))
        if together is None:
            together = _TOGETHER[(keys, type(dialect))] = _Together(keys, dialect)
        return [(together.sql, together.bound([rows for _, rows in batches]))]
    statements = []
    for table, rows in batches:
        plan = _plan_of(table, len(rows), dialect)
        statements.append((plan.sql, plan.bound(rows)))
    return statements


def _may_lead(
    batches: Sequence[tuple[sa.Table, Rows]], select: RecordSelect, dialect: Dialect
) -> bool:
    """Whether ``select`` may carry the inserts of ``batches`` in its own statement: each
    batch small, and none of their tables read by it (the statement's parts share one
    snapshot, so it would not see the rows)."""
    if any(len(rows) > MAX_ROWS for _, rows in batches):
        return False
    read = tables_read(select, dialect)
    return read is not None and read.isdisjoint(table.name for table, _ in batches)


def _after(
    batches: Sequence[tuple[sa.Table, Rows]], select: RecordSelect, dialect: Dialect
) -> RecordSelect:
    """``select`` with the inserts of ``batches`` before it, as data-modifying ``WITH``
    parts of its statement (``_may_lead``)."""
    keys = tuple((table, len(rows)) for table, rows in batches)
    plans = [
        _prefixed_plan_of(table, count, dialect, f"w{index}_")
        for index, (table, count) in enumerate(keys)
    ]
    parameters = dict(select.parameters)
    for plan, (_, rows) in zip(plans, batches, strict=True):
        parameters.update(plan.named(rows))

    def build(dialect_name: str) -> Any:
        return select.build(dialect_name).add_cte(*_written(plans))

    return RecordSelect(select.model, ("after", keys, select.kind), build, parameters, writes=True)


def _written(plans: Sequence[_Plan]) -> list[Any]:
    return [plan.stmt.cte(f"written_{index}") for index, plan in enumerate(plans)]


async def _writing_driver(
    connection: AsyncConnection, batches: Sequence[tuple[sa.Table, Rows]]
) -> psycopg.AsyncConnection[Any] | None:
    """psycopg's connection, where these rows may go to it directly: PostgreSQL, in a
    write transaction, every row giving every column; ``None`` otherwise."""
    if connection.dialect.name != "postgresql" or not all(
        _whole(table, rows) for table, rows in batches
    ):
        return None
    driver = await driver_of(connection)
    if driver.autocommit or driver.info.transaction_status not in WRITING:
        return None
    return driver


def _whole(table: sa.Table, rows: Rows) -> bool:
    """Whether every row gives every column of ``table`` (and nothing else), in a batch
    that can be planned: small, or of a table whose columns hold no arrays."""
    keys = _keys_of(table)
    plannable = len(rows) <= MAX_ROWS or not _has_arrays(table)
    return plannable and all(row.keys() == keys for row in rows)


@functools.cache
def _keys_of(table: sa.Table) -> frozenset[str]:
    return frozenset(column.key for column in table.columns)


@functools.cache
def _has_arrays(table: sa.Table) -> bool:
    """Whether a column holds an array (``unnest`` would flatten its values)."""
    return any(isinstance(column.type, sa.ARRAY) for column in table.columns)


class _Plan:
    """The INSERT of ``count`` rows into ``table``: its text, with a parameter per row and
    column (named after ``prefix``), and the bind processors SQLAlchemy would run on each
    column's values."""

    def __init__(self, table: sa.Table, count: int, dialect: Dialect, prefix: str = "") -> None:
        columns = list(table.columns)
        self.names = [[f"{prefix}{column.key}__{i}" for column in columns] for i in range(count)]
        values = [
            {
                column.key: sa.bindparam(name, type_=column.type)
                for column, name in zip(columns, names, strict=True)
            }
            for names in self.names
        ]
        self.stmt = sa.insert(table).values(values)
        self.sql, self.order = _numbered(self.stmt, dialect)
        self.keys = [column.key for column in columns]
        self.processors = _processors(columns, dialect)

    def named(self, rows: Rows) -> dict[str, Any]:
        """The rows' values under their parameters' names, as given (not processed)."""
        return {
            name: row[key]
            for row, names in zip(rows, self.names, strict=True)
            for key, name in zip(self.keys, names, strict=True)
        }

    def processed(self, rows: Rows) -> dict[str, Any]:
        """The rows' values under their parameters' names, as SQLAlchemy would send them."""
        bound: dict[str, Any] = {}
        for row, names in zip(rows, self.names, strict=True):
            for key, name, process in zip(self.keys, names, self.processors, strict=True):
                value = row[key]
                bound[name] = value if process is None else process(value)
        return bound

    def bound(self, rows: Rows) -> list[Any]:
        processed = self.processed(rows)
        return [processed[name] for name in self.order]


class _Together:
    """The inserts of several small batches as one statement, each but the last a
    data-modifying ``WITH`` part. Its parts run as one: foreign keys are checked once all
    have run, and a refusal of any refuses them all."""

    def __init__(self, keys: tuple[tuple[sa.Table, int], ...], dialect: Dialect) -> None:
        self.parts = [
            _prefixed_plan_of(table, count, dialect, f"w{index}_")
            for index, (table, count) in enumerate(keys)
        ]
        *first, last = self.parts
        self.sql, self.order = _numbered(last.stmt.add_cte(*_written(first)), dialect)

    def bound(self, batches: Sequence[Rows]) -> list[Any]:
        processed: dict[str, Any] = {}
        for part, rows in zip(self.parts, batches, strict=True):
            processed.update(part.processed(rows))
        return [processed[name] for name in self.order]


class _ArrayPlan:
    """The INSERT of any number of rows into ``table`` (PostgreSQL): a parameter per
    column holding that column's values as an array, unnested into rows."""

    def __init__(self, table: sa.Table, dialect: Dialect) -> None:
        columns = list(table.columns)
        quote = dialect.identifier_preparer.quote
        arrays = ", ".join(
            f"${index}::{column.type.compile(dialect=dialect)}[]"
            for index, column in enumerate(columns, start=1)
        )
        self.sql = (
            f"INSERT INTO {dialect.identifier_preparer.format_table(table)} "
            f"({', '.join(quote(column.name) for column in columns)}) "
            f"SELECT * FROM unnest({arrays})"
        )
        self.keys = [column.key for column in columns]
        self.arrays = [array_values(column.type, dialect) for column in columns]

    def bound(self, rows: Rows) -> list[Any]:
        return [
            array([row[key] for row in rows])
            for key, array in zip(self.keys, self.arrays, strict=True)
        ]


def _numbered(stmt: sa.Insert, dialect: Dialect) -> tuple[str, list[str]]:
    """``stmt``'s text with its parameters as PostgreSQL's ``$1``, ``$2``…, which psycopg's
    raw cursors send as they are (other cursors parse the text at each execution of a
    statement of more than 50 parameters), and their names in that order."""
    compiled = stmt.compile(dialect=_numbering(dialect))
    assert compiled.positiontup is not None
    return compiled.string, list(compiled.positiontup)


# By dialect class: one of it that writes parameters as ``$1``, ``$2``…
_NUMBERING: dict[type[Dialect], Dialect] = {}


def _numbering(dialect: Dialect) -> Dialect:
    numbering = _NUMBERING.get(type(dialect))
    if numbering is None:
        make: Callable[..., Dialect] = type(dialect)
        numbering = _NUMBERING[type(dialect)] = make(paramstyle="numeric_dollar")
    return numbering


def _processors(
    columns: Sequence[sa.Column[Any]], dialect: Dialect
) -> list[Callable[[Any], Any] | None]:
    """The bind processors SQLAlchemy would run on each column's values."""
    return [column.type.dialect_impl(dialect).bind_processor(dialect) for column in columns]


# Plans by (table, row count, dialect class); batches of more than ``MAX_ROWS`` share
# one array plan per table (count 0 in the key).
_PLANS: dict[tuple[sa.Table, int, type[Dialect]], _Plan | _ArrayPlan] = {}
# Plans of batches that go in another statement, by the same and their parameters' prefix.
_PREFIXED: dict[tuple[sa.Table, int, type[Dialect], str], _Plan] = {}
# Statements of several batches, by their tables and row counts, and dialect class.
_TOGETHER: dict[tuple[tuple[tuple[sa.Table, int], ...], type[Dialect]], _Together] = {}
MAX_ROWS = 16


def _plan_of(table: sa.Table, count: int, dialect: Dialect) -> _Plan | _ArrayPlan:
    arrays = count > MAX_ROWS
    key = (table, 0 if arrays else count, type(dialect))
    plan = _PLANS.get(key)
    if plan is None:
        made = _ArrayPlan(table, dialect) if arrays else _Plan(table, count, dialect)
        plan = _PLANS[key] = made
    return plan


def _prefixed_plan_of(table: sa.Table, count: int, dialect: Dialect, prefix: str) -> _Plan:
    """The plan of at most ``MAX_ROWS`` rows into ``table`` whose parameters' names begin
    with ``prefix``, to go in another statement."""
    key = (table, count, type(dialect), prefix)
    plan = _PREFIXED.get(key)
    if plan is None:
        plan = _PREFIXED[key] = _Plan(table, count, dialect, prefix)
    return plan
