"""Keyset pagination: stable pages however rows are inserted meanwhile.

A list's conditions (``Where``) have fixed shapes around one parameter each, so a page's
statement is built and compiled once per combination of shapes
(``signoff.models.records.select_records``) and a request only binds values: building
and keying the statement for every request cost more than running it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar, cast

from sqlalchemy import BindParameter, ColumnElement, Integer, Select, and_, bindparam, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Mapped
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import jsoncodec
from signoff.constants import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX
from signoff.errors import ValidationFailed
from signoff.models.base import UTCDateTime
from signoff.models.records import (
    Along,
    RecordSelect,
    one_of,
    record_columns,
    select_along,
    select_records,
)

T = TypeVar("T")
M = TypeVar("M", bound=SQLModel)


def _attribute(column: Mapped[Any]) -> InstrumentedAttribute[Any]:
    """A model's column as SQLModel's ``col()`` gives it (typed as its value)."""
    return cast(InstrumentedAttribute[Any], column)


@dataclass(frozen=True)
class Order:
    column: Mapped[Any]
    descending: bool = False

    @property
    def attribute(self) -> InstrumentedAttribute[Any]:
        return _attribute(self.column)


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    cursors: list[str]
    has_next_page: bool
    has_previous_page: bool
    # The records of each read asked ``along`` the page, or ``None`` where they were
    # not read with it (then they are read by the keys of the page's items).
    along: list[list[Any]] | None = field(default=None, repr=False)

    @property
    def end_cursor(self) -> str | None:
        return self.cursors[-1] if self.cursors else None

    @property
    def start_cursor(self) -> str | None:
        return self.cursors[0] if self.cursors else None


def page_size(first: int | None) -> int:
    if first is None:
        return PAGE_SIZE_DEFAULT
    if not 1 <= first <= PAGE_SIZE_MAX:
        raise ValidationFailed(f"first must be between 1 and {PAGE_SIZE_MAX}.", field="first")
    return first


class Where(Protocol):
    """One condition of a list, of a fixed shape around one parameter: a list's
    statement is built and compiled once per combination of shapes, and a request
    gives only the values."""

    @property
    def shape(self) -> Hashable: ...

    @property
    def value(self) -> Any: ...

    def clause(self, name: str, dialect: str) -> ColumnElement[bool]: ...


@dataclass(frozen=True)
class Equals:
    column: Mapped[Any]
    value: Any

    @property
    def shape(self) -> Hashable:
        return ("=", _attribute(self.column).key)

    def clause(self, name: str, dialect: str) -> ColumnElement[bool]:
        return self.column == bindparam(name)


@dataclass(frozen=True)
class OneOf:
    column: Mapped[Any]
    values: Collection[Any]

    @property
    def shape(self) -> Hashable:
        return ("in", _attribute(self.column).key)

    @property
    def value(self) -> Any:
        return list(self.values)

    def clause(self, name: str, dialect: str) -> ColumnElement[bool]:
        return one_of(cast(ColumnElement[Any], self.column), name, dialect)


@dataclass(frozen=True)
class Matches:
    """A condition of its own: ``build`` makes it around the parameter it is given;
    ``kind`` names what decides its text."""

    kind: Hashable
    build: Callable[[BindParameter[Any]], ColumnElement[bool]]
    value: Any

    @property
    def shape(self) -> Hashable:
        return self.kind

    def clause(self, name: str, dialect: str) -> ColumnElement[bool]:
        return self.build(bindparam(name))


async def paginate(
    session: AsyncSession,
    model: type[M],
    where: Sequence[Where],
    order: Sequence[Order],
    *,
    first: int | None,
    after: str | None,
    along: Sequence[Along] = (),
) -> Page[M]:
    """The ``model`` rows matching every one of ``where``, ordered by ``order``, from
    just after the ``after`` cursor; the page's items are records of the model
    (``signoff.models.records``), as a page is only read. The reads ``along`` it (its
    items' relations) come with it where the connection allows (``Page.along``)."""
    size = page_size(first)
    parameters = {f"where{i}": condition.value for i, condition in enumerate(where)}
    parameters["limit"] = size + 1
    if after is not None:
        for i, value in enumerate(decode_cursor(after, order)):
            parameters[f"after{i}"] = value
    shape = (
        model,
        tuple(condition.shape for condition in where),
        tuple((o.attribute.key, o.descending) for o in order),
        after is not None,
    )
    build = functools.partial(_page_statement, model, where, order, after is not None)
    selected = RecordSelect(model, shape, build, parameters)
    found = await select_along(session, selected, along)
    if found is None:
        rows = await select_records(session, model, shape, build, parameters)
        along_rows = None
    else:
        rows, along_rows = found
    items = rows[:size]
    keys = [o.attribute.key for o in order]
    cursors = [encode_cursor([getattr(item, key) for key in keys]) for item in items]
    return Page(
        items,
        cursors,
        has_next_page=len(rows) > size,
        has_previous_page=after is not None,
        along=along_rows,
    )


def _page_statement(
    model: type[Any], where: Sequence[Where], order: Sequence[Order], after: bool, dialect: str
) -> Select[Any]:
    clauses = [condition.clause(f"where{i}", dialect) for i, condition in enumerate(where)]
    if after:
        clauses.append(_after(order))
    return (
        select(*record_columns(model))
        .where(*clauses)
        .order_by(*(o.column.desc() if o.descending else o.column.asc() for o in order))
        .limit(bindparam("limit", type_=Integer))
    )


def _after(order: Sequence[Order]) -> ColumnElement[bool]:
    """Rows strictly after the ``after{i}`` parameters in the lexicographic order
    ``order`` defines."""
    values: list[BindParameter[Any]] = [bindparam(f"after{i}") for i in range(len(order))]
    clauses = []
    for i, current in enumerate(order):
        equal = [order[j].column == values[j] for j in range(i)]
        beyond = current.column < values[i] if current.descending else current.column > values[i]
        clauses.append(and_(*equal, beyond))
    return or_(*clauses)


def encode_cursor(values: list[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    return base64.urlsafe_b64encode(jsoncodec.dumps(plain)).decode().rstrip("=")


def decode_cursor(cursor: str, order: Sequence[Order]) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(values, list) or len(values) != len(order):
            raise ValueError
        return [
            datetime.fromisoformat(v) if isinstance(o.attribute.type, UTCDateTime) else v
            for o, v in zip(order, values, strict=True)
        ]
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("after is not a cursor from this list.", field="after") from None
