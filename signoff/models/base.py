"""Column types and helpers shared by every table."""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

import sqlalchemy as sa
from pydantic.fields import FieldInfo
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm.attributes import instance_dict
from sqlalchemy.orm.base import manager_of_class
from sqlmodel import Field, SQLModel

from signoff import clock


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """Timezone-aware UTC in Python on both databases.

    PostgreSQL stores ``timestamptz``; SQLite stores naive UTC text, which sorts
    and compares correctly because every value is UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; use signoff.clock.now()")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


JSONValue = sa.JSON().with_variant(JSONB(), "postgresql")


_id_lock = threading.Lock()
_last_id_time = (0, 0)  # (unix milliseconds, 12-bit counter) of the last id handed out


def new_id() -> str:
    """A UUIDv7 string, increasing within this process.

    Ids made in the same millisecond count up in the 12-bit ``rand_a`` field (RFC 9562,
    method 1), so ordering rows by id keeps the order they were created in: the change
    feed relies on it to keep one transaction's events in order.
    """
    return new_ids(1)[0]


_RAND_B = (1 << 62) - 1


def new_ids(count: int) -> list[str]:
    """``count`` ids as ``new_id`` makes them, increasing in the order given, for a batch's
    rows (a claim's audit records and change events): one look at the clock, one lock and
    one read of random bytes for them all, where each id took its own."""
    global _last_id_time
    stamps: list[int] = []
    with _id_lock:
        millis = int(time.time() * 1000)
        last_millis, last_counter = _last_id_time
        for _ in range(count):
            if millis <= last_millis:
                millis, counter = last_millis, last_counter + 1
                if counter > 0xFFF:
                    millis, counter = last_millis + 1, 0
            else:
                counter = 0
            stamps.append(((millis & ((1 << 48) - 1)) << 80) | (0x7 << 76) | (counter << 64))
            last_millis, last_counter = millis, counter
        _last_id_time = (last_millis, last_counter)
    noise = os.urandom(8 * count)
    ids = []
    for index, stamp in enumerate(stamps):
        rand_b = int.from_bytes(noise[8 * index : 8 * index + 8], "big") & _RAND_B
        # What str(uuid.UUID(int=...)) writes, in half the time.
        digits = f"{stamp | (0b10 << 62) | rand_b:032x}"
        ids.append(f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}")
    return ids


M = TypeVar("M", bound=SQLModel)
E = TypeVar("E", bound=StrEnum)


def by_value(kind: type[E]) -> dict[str, E]:
    """Each member of ``kind`` by its value: ``by_value(kind)[value]`` is ``kind(value)``
    (for a member too, which a ``StrEnum``'s is) found by a lookup rather than two Python
    calls, for what is read per row of a page; a value no member has is a KeyError."""
    return {member.value: member for member in kind}


def built(model: type[M], **values: Any) -> M:
    """A new row of ``model``: ``values``, and its fields' defaults for the rest.

    Made as SQLAlchemy makes a row it loads, the values put straight into the instance's
    dictionary, where SQLModel's constructor sets each field through the ORM's instrumentation.
    The row is transient, as a constructed one is, and nothing is validated (a table model's
    constructor validates nothing either)."""
    fields = _fields_of(model)
    unknown = values.keys() - fields.keys()
    if unknown:
        raise TypeError(f"{model.__name__} has no field {sorted(unknown)[0]!r}")
    for name, (field, factory) in fields.items():
        if name not in values:
            if field.is_required():
                raise TypeError(f"{model.__name__} needs {name!r}")
            values[name] = factory() if factory is not None else field.get_default()
    instance: M = manager_of_class(model).new_instance()
    instance_dict(instance).update(values)
    return instance


@functools.cache
def _fields_of(
    model: type[SQLModel],
) -> dict[str, tuple[FieldInfo, Callable[[], Any] | None]]:
    """Each field and its default factory, called without arguments: pydantic's
    ``get_default`` inspects the factory's signature on every call to find out."""
    fields: dict[str, tuple[FieldInfo, Callable[[], Any] | None]] = {}
    for name, field in model.model_fields.items():
        if field.default_factory_takes_validated_data:
            raise TypeError(f"{model.__name__}.{name}: a default factory taking data")
        fields[name] = (field, field.default_factory)  # type: ignore[assignment]
    return fields


def id_field() -> Any:
    return Field(default_factory=new_id, primary_key=True, max_length=36)


# Mapper arguments of a versioned table (``version_field``): an ORM flush reads the new
# version back with RETURNING instead of expiring it, because an async session cannot
# lazy-load an expired attribute (``MissingGreenlet``).
VERSIONED: dict[str, Any] = {"eager_defaults": True}


def version_field() -> Any:
    """The row's version: 1 when inserted, one more on every UPDATE SQLAlchemy issues.

    The bump is a SQL expression, so it applies alike to compare-and-set statements and to ORM
    attribute changes, and the row lock keeps two updates from producing one version. An
    ``ON CONFLICT DO UPDATE`` does not apply ``onupdate``: such a statement sets it itself."""
    return Field(
        default=1,
        sa_column=sa.Column(
            sa.Integer,
            nullable=False,
            default=1,
            server_default="1",
            onupdate=sa.literal_column("version") + 1,
        ),
    )


def fk_field(target: str, *, nullable: bool = False, index: bool = True) -> Any:
    return Field(
        default=None if nullable else ...,
        sa_column=sa.Column(sa.String(36), sa.ForeignKey(target), nullable=nullable, index=index),
    )


def json_field(*, nullable: bool = False, default: Any = None) -> Any:
    factory = (lambda: None) if nullable and default is None else (lambda: _copy(default))
    return Field(default_factory=factory, sa_column=sa.Column(JSONValue, nullable=nullable))


def time_field(*, nullable: bool = False, default_now: bool = False, index: bool = False) -> Any:
    if default_now:
        return Field(
            default_factory=clock.now,
            sa_column=sa.Column(UTCDateTime(), nullable=nullable, index=index),
        )
    return Field(
        default=None if nullable else ...,
        sa_column=sa.Column(UTCDateTime(), nullable=nullable, index=index),
    )


def enum_field(default: Any = ..., *, index: bool = False) -> Any:
    """Enums are stored as their plain string value, so adding a member needs no migration."""
    return Field(default=default, sa_column=sa.Column(sa.String(32), nullable=False, index=index))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value
