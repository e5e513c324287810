"""Array parameters as the text of a PostgreSQL array, which the server reads as the array
type its cast or its place asks for.

psycopg dumps a list element by element in Python, testing each with a regular
expression and escaping quotes with another: a batch's JSON documents (audit details,
change events' snapshots), full of quotes, cost it milliseconds per array. Here each
element is written with ``str`` methods; a list holding a type not handled here is
left to psycopg (``array_text`` answers ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from psycopg.types.json import Json, Jsonb
from sqlalchemy.engine import Dialect

from signoff import jsoncodec


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def text_array(values: Sequence[str]) -> str:
    """PostgreSQL's text for an array of strings."""
    text = array_text(values)
    assert text is not None  # strings only
    return text


# An array of strings is joined by NUL and escaped in three passes over the whole text,
# not element by element (a batch's arrays hold thousands of them). PostgreSQL's text
# holds no NUL, so a string holding one is written element by element, to be refused.
_SEPARATOR = "\x00"


def array_text(values: Sequence[Any]) -> str | None:
    """PostgreSQL's text for an array of ``values`` (``None``, strings, booleans, integers,
    timezone-aware datetimes and psycopg's JSON wrappers), or ``None`` if it holds
    anything else: the caller then sends the list itself."""
    try:
        joined = _SEPARATOR.join(values)
    except TypeError:
        return _element_by_element(values)
    if not values or joined.count(_SEPARATOR) != len(values) - 1:
        return _element_by_element(values)
    escaped = joined.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + escaped.replace(_SEPARATOR, '","') + '"}'


def _element_by_element(values: Sequence[Any]) -> str | None:
    items: list[str] = []
    append = items.append
    times: dict[datetime, str] = {}  # a batch's rows mostly share one time
    for value in values:
        kind = type(value)
        if kind is str:
            append(_quoted(value))
        elif value is None:
            append("NULL")
        elif kind is bool:
            append("t" if value else "f")
        elif kind is int:
            append(str(value))
        elif kind is datetime and value.tzinfo is not None:
            text = times.get(value)
            if text is None:
                text = times[value] = _quoted(value.isoformat())
            append(text)
        elif kind is Json or kind is Jsonb:
            append(_quoted(_json_text(value)))
        else:
            return None
    return "{" + ",".join(items) + "}"


def _json_text(wrapped: Json | Jsonb) -> str:
    """What psycopg sends for a JSON wrapper on Signoff's engines, whose JSON serializer
    is ``jsoncodec.dumps`` (``database.create_engine``), unless the wrapper names its own."""
    dumps = wrapped.dumps or jsoncodec.dumps
    text = dumps(wrapped.obj)
    return text if isinstance(text, str) else bytes(text).decode()


def array_values(
    element: sa.types.TypeEngine[Any], dialect: Dialect
) -> Callable[[Sequence[Any]], Any]:
    """How a list of ``element`` values travels: its elements through the bind processor
    SQLAlchemy would run on each, then as the text of an array where ``array_text``
    writes one (PostgreSQL), else as the list."""
    process = element.dialect_impl(dialect).bind_processor(dialect)
    texts = dialect.name == "postgresql"

    def bound(values: Sequence[Any]) -> Any:
        processed = list(values) if process is None else [process(value) for value in values]
        if not texts:
            return processed
        text = array_text(processed)
        return processed if text is None else text

    return bound


class ArrayText(sa.types.UserDefinedType[Any]):
    """A list parameter of ``element`` values sent as the text of an array
    (``array_values``); place it where the statement casts it to its array type
    (``array_parameter``). PostgreSQL only."""

    cache_ok = True

    def __init__(self, element: sa.types.TypeEngine[Any]) -> None:
        self.element = element

    def get_col_spec(self, **_: Any) -> str:
        return "TEXT"  # a parameter only: never a column

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        return array_values(self.element, dialect)


def array_parameter(name: str, element: sa.types.TypeEngine[Any]) -> sa.ColumnElement[Any]:
    """A named list parameter of ``element`` values, cast to their array type: its values
    travel as the text of the array (``ArrayText``)."""
    return sa.cast(sa.bindparam(name, type_=ArrayText(element)), sa.ARRAY(element))


def among(
    column: Any,
    values: Sequence[Any],
    element: sa.types.TypeEngine[Any],
    dialect: str,
) -> sa.ColumnElement[bool]:
    """``column IN values``; on PostgreSQL ``column = ANY`` of one array parameter: a
    statement of one text whatever the count, where an ``IN`` list is rendered anew for
    each length, and psycopg converts its long text anew each time (no cache for it)."""
    condition: sa.ColumnElement[bool] = (
        column.in_(values)
        if dialect != "postgresql"
        else column == sa.any_(_array(values, element))
    )
    return condition


def pairs_among(
    columns: tuple[Any, Any],
    pairs: Sequence[tuple[Any, Any]],
    elements: tuple[sa.types.TypeEngine[Any], sa.types.TypeEngine[Any]],
    dialect: str,
) -> sa.ColumnElement[bool]:
    """``(a, b) IN pairs``, as ``among`` does it: on PostgreSQL, of two arrays unnested
    side by side."""
    if dialect != "postgresql":
        return sa.tuple_(*columns).in_(list(pairs))
    firsts = _array([first for first, _ in pairs], elements[0])
    seconds = _array([second for _, second in pairs], elements[1])
    return sa.tuple_(*columns).in_(sa.select(sa.func.unnest(firsts), sa.func.unnest(seconds)))


def _array(values: Sequence[Any], element: sa.types.TypeEngine[Any]) -> sa.ColumnElement[Any]:
    return sa.cast(sa.bindparam(None, list(values), type_=ArrayText(element)), sa.ARRAY(element))
