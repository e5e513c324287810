"""Records: a row's columns as attributes, standing in for a model instance where a
row is only read.

Read paths (a page of proposals, the DataLoaders behind nested fields) read a model's
columns and nothing else. An ORM instance costs three times as much to build and read
(identity map, instrumented attributes), and a Core ``Row`` is slower to read than
either; on a page of 20 proposals with their targets, approvals and tasks that was a
fifth of the request. A record is read-only by convention: never add it to a session.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Result, Table
from sqlmodel import SQLModel

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
