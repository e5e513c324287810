"""Keyset pagination: stable pages however rows are inserted meanwhile."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import and_, or_
from sqlalchemy.orm import InstrumentedAttribute, Mapped
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import SelectOfScalar

from signoff.constants import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX
from signoff.errors import ValidationFailed
from signoff.models.base import UTCDateTime
from signoff.models.records import records, table_of

T = TypeVar("T")


@dataclass(frozen=True)
class Order:
    column: Mapped[Any]
    descending: bool = False

    @property
    def attribute(self) -> InstrumentedAttribute[Any]:
        return cast(InstrumentedAttribute[Any], self.column)

    def value_of(self, item: Any) -> Any:
        return getattr(item, self.attribute.key)


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    cursors: list[str]
    has_next_page: bool
    has_previous_page: bool

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


async def paginate(
    session: AsyncSession,
    stmt: SelectOfScalar[T],
    order: Sequence[Order],
    *,
    first: int | None,
    after: str | None,
) -> Page[T]:
    """Run ``stmt`` (a select of one model) ordered by ``order`` from just after the
    ``after`` cursor; the page's items are records of the model (``signoff.models.
    records``), as a page is only read."""
    size = page_size(first)
    if after is not None:
        stmt = stmt.where(_after(order, decode_cursor(after, order)))
    stmt = stmt.order_by(*(o.column.desc() if o.descending else o.column.asc() for o in order))
    model = stmt.column_descriptions[0]["entity"]
    columns = stmt.with_only_columns(*table_of(model).columns).limit(size + 1)
    connection = await session.connection()
    rows: list[T] = records(model, await connection.execute(columns))
    items = rows[:size]
    cursors = [encode_cursor([o.value_of(item) for o in order]) for item in items]
    return Page(items, cursors, has_next_page=len(rows) > size, has_previous_page=after is not None)


def _after(order: Sequence[Order], values: list[Any]) -> Any:
    """Rows strictly after ``values`` in the lexicographic order ``order`` defines."""
    clauses = []
    for i, current in enumerate(order):
        equal = [order[j].column == values[j] for j in range(i)]
        beyond = current.column < values[i] if current.descending else current.column > values[i]
        clauses.append(and_(*equal, beyond))
    return or_(*clauses)


def encode_cursor(values: list[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    return base64.urlsafe_b64encode(json.dumps(plain).encode()).decode().rstrip("=")


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
