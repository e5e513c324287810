"""Inserts of rows with every column given, compiled once per table and row count.

On PostgreSQL, in a write transaction, they go to psycopg directly, several tables' in one
pipeline (one round trip), with SQLAlchemy's compiled text and bind processors; a refusal
is raised as SQLAlchemy raises it. Past ``MAX_ROWS`` rows each column goes as an array
(``unnest``), sent as the text of an array (``arrays.array_values``): one text per
table, which psycopg converts once. Elsewhere, and for rows that leave a column out, they
go through SQLAlchemy (docs/design.md section 12).
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
    WRITING,
    RecordSelect,
    raise_as_sqlalchemy,
    select_all_on,
    selected_after,
)

Rows = Sequence[Mapping[str, Any]]


async def insert_rows(
    connection: AsyncConnection, batches: Sequence[tuple[sa.Table, Rows]]
) -> None:
    """Insert each table's rows, one statement per table, in the order given."""
    batches = [(table, rows) for table, rows in batches if rows]
    if not batches:
        return
    driver = await _writing_driver(connection, batches)
    if driver is None:
        for table, rows in batches:
            await connection.execute(sa.insert(table), list(rows))
        return
    dialect = connection.dialect
    plans = [_plan_of(table, len(rows), dialect) for table, rows in batches]
    parameters = [plan.bound(rows) for plan, (_, rows) in zip(plans, batches, strict=True)]
    sync = connection.sync_connection
    assert sync is not None  # an AsyncConnection from a session is started
    cursor = driver.cursor()
    for plan, params in zip(plans, parameters, strict=True):
        sync.dispatch.before_cursor_execute(sync, cursor, plan.sql, params, None, False)
    try:
        if len(plans) == 1:
            await cursor.execute(plans[0].sql, parameters[0])
        else:
            async with driver.pipeline():
                for plan, params in zip(plans, parameters, strict=True):
                    await cursor.execute(plan.sql, params)
    except psycopg.Error as failed:
        await connection.run_sync(raise_as_sqlalchemy, failed, plans[0].sql, parameters[0])
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
    answer to them. A refused row is raised as SQLAlchemy raises it, and nothing after
    it runs."""
    batches = [(table, rows) for table, rows in batches if rows]
    if not selects:
        await insert_rows(connection, batches)
        return []
    if batches and await _writing_driver(connection, batches) is not None:
        dialect = connection.dialect
        writes = []
        for table, rows in batches:
            plan = _plan_of(table, len(rows), dialect)
            writes.append((plan.sql, plan.bound(rows)))
        found = await selected_after(connection, writes, selects)
        if found is not None:
            return found
    await insert_rows(connection, batches)
    return await select_all_on(connection, selects)


async def _writing_driver(
    connection: AsyncConnection, batches: Sequence[tuple[sa.Table, Rows]]
) -> psycopg.AsyncConnection[Any] | None:
    """psycopg's connection, where these rows may go to it directly: PostgreSQL, in a
    write transaction, every row giving every column; ``None`` otherwise."""
    if connection.dialect.name != "postgresql" or not all(
        _whole(table, rows) for table, rows in batches
    ):
        return None
    raw = await connection.get_raw_connection()
    driver: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
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
    column, and the bind processors SQLAlchemy would run on each column's values."""

    def __init__(self, table: sa.Table, count: int, dialect: Dialect) -> None:
        columns = list(table.columns)
        self.names = [[f"{column.key}__{i}" for column in columns] for i in range(count)]
        values = [
            {
                column.key: sa.bindparam(name, type_=column.type)
                for column, name in zip(columns, names, strict=True)
            }
            for names in self.names
        ]
        stmt = sa.insert(table).values(values)
        self.sql = stmt.compile(dialect=dialect).string
        self.keys = [column.key for column in columns]
        self.processors = _processors(columns, dialect)

    def bound(self, rows: Rows) -> dict[str, Any]:
        bound: dict[str, Any] = {}
        for row, names in zip(rows, self.names, strict=True):
            for key, name, process in zip(self.keys, names, self.processors, strict=True):
                value = row[key]
                bound[name] = value if process is None else process(value)
        return bound


class _ArrayPlan:
    """The INSERT of any number of rows into ``table`` (PostgreSQL): a parameter per
    column holding that column's values as an array, unnested into rows."""

    def __init__(self, table: sa.Table, dialect: Dialect) -> None:
        columns = list(table.columns)
        quote = dialect.identifier_preparer.quote
        arrays = ", ".join(
            f"%({column.key})s::{column.type.compile(dialect=dialect)}[]" for column in columns
        )
        self.sql = (
            f"INSERT INTO {dialect.identifier_preparer.format_table(table)} "
            f"({', '.join(quote(column.name) for column in columns)}) "
            f"SELECT * FROM unnest({arrays})"
        )
        self.keys = [column.key for column in columns]
        self.arrays = [array_values(column.type, dialect) for column in columns]

    def bound(self, rows: Rows) -> dict[str, Any]:
        return {
            key: array([row[key] for row in rows])
            for key, array in zip(self.keys, self.arrays, strict=True)
        }


def _processors(
    columns: Sequence[sa.Column[Any]], dialect: Dialect
) -> list[Callable[[Any], Any] | None]:
    """The bind processors SQLAlchemy would run on each column's values."""
    return [column.type.dialect_impl(dialect).bind_processor(dialect) for column in columns]


# Plans by (table, row count, dialect class); batches of more than ``MAX_ROWS`` share
# one array plan per table (count 0 in the key).
_PLANS: dict[tuple[sa.Table, int, type[Dialect]], _Plan | _ArrayPlan] = {}
MAX_ROWS = 16


def _plan_of(table: sa.Table, count: int, dialect: Dialect) -> _Plan | _ArrayPlan:
    arrays = count > MAX_ROWS
    key = (table, 0 if arrays else count, type(dialect))
    plan = _PLANS.get(key)
    if plan is None:
        made = _ArrayPlan(table, dialect) if arrays else _Plan(table, count, dialect)
        plan = _PLANS[key] = made
    return plan
