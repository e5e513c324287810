"""Records: a row's columns as attributes, standing in for a model instance where a
row is only read.

Read paths (a page of proposals, the DataLoaders behind nested fields) read a model's
columns and nothing else. An ORM instance costs three times as much to build and read
(identity map, instrumented attributes), and a Core ``Row`` is slower to read than
either; on a page of 20 proposals with their targets, approvals and tasks that was a
fifth of the request. A record is read-only by convention: never add it to a session.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import Result, Select, Table, any_, bindparam
from sqlalchemy import select as select_rows
from sqlalchemy.dialects import postgresql
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


async def rows_where(
    session: AsyncSession,
    model: type[M],
    column: str,
    keys: Sequence[str],
    order_by: str | None = None,
) -> list[M]:
    """Records of the ``model`` rows whose ``column`` is one of ``keys``."""
    connection = await session.connection()
    stmt = _rows_with(model, column, order_by, connection.dialect.name)
    return records(model, await connection.execute(stmt, {"keys": list(keys)}))


@functools.cache
def _rows_with(
    model: type[SQLModel], column: str, order_by: str | None, dialect: str
) -> Select[Any]:
    """``model`` rows whose ``column`` is one of the ``keys`` parameter: built once per
    loader kind, as building and keying a statement cost a third of its execution.

    On PostgreSQL the keys travel as one array (``= ANY(:keys)``): one statement text
    whatever their number, which the server prepares once, where ``IN (:k1, :k2, …)``
    is rendered anew for each number of keys.
    """
    table = table_of(model)
    if dialect == "postgresql":
        keys = bindparam("keys", type_=postgresql.ARRAY(table.c[column].type))
        stmt = select_rows(table).where(table.c[column] == any_(keys))
    else:
        stmt = select_rows(table).where(table.c[column].in_(bindparam("keys", expanding=True)))
    if order_by is not None:
        stmt = stmt.order_by(table.c[order_by])
    return stmt
