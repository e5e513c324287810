"""Array parameters sent as text (``signoff.models.arrays``) reach the server as the arrays
psycopg's own dumping of the lists makes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.models.arrays import among, array_parameter, array_text, pairs_among
from signoff.models.base import JSONValue, UTCDateTime
from tests.conftest import requires_postgres

AWKWARD = ["", " ", "NULL", "null", 'a "quoted" word', "back\\slash", "{braces},", "\u2028é", "\t"]
NOW = datetime(2026, 12, 7, 8, 0, 0, 123456, tzinfo=UTC)
CASES: list[tuple[sa.types.TypeEngine[Any], list[Any]]] = [
    (sa.String(), [*AWKWARD, None]),
    (sa.BigInteger(), [0, -1, 2**62, None]),
    (sa.Integer(), [None, None]),
    (sa.Boolean(), [True, False, None]),
    (UTCDateTime(), [NOW, NOW.astimezone(timezone(timedelta(hours=-5))), None, NOW]),
    (
        JSONValue,
        [{"k": AWKWARD, "n": 2**60, "x": [1.5, None, True]}, None, "text", [], {"": {"\\": '"'}}],
    ),
    (sa.Float(), [1.5, None]),  # not written here: psycopg dumps the list
]


@requires_postgres
@pytest.mark.parametrize(("element", "values"), CASES, ids=lambda case: repr(case)[:24])
async def test_an_array_as_text_is_the_array_psycopg_sends(
    engine: AsyncEngine, element: sa.types.TypeEngine[Any], values: list[Any]
) -> None:
    as_text = sa.select(array_parameter("v", element))
    as_list = sa.select(sa.bindparam("v", type_=sa.ARRAY(element)))
    async with engine.connect() as connection:
        got = (await connection.execute(as_text, {"v": values})).scalar_one()
        expected = (await connection.execute(as_list, {"v": values})).scalar_one()
    assert got == expected
    assert len(got) == len(values)


def test_a_type_not_written_here_leaves_the_list_to_psycopg() -> None:
    assert array_text([1.5]) is None
    assert array_text([datetime(2026, 1, 1)]) is None  # naive: no text says which zone
    assert array_text(['a"b', None, 3, True]) == '{"a\\"b",NULL,3,t}'


def test_strings_joined_at_once_read_as_written_one_by_one() -> None:
    assert array_text(AWKWARD) == "{" + ",".join(_quoted(text) for text in AWKWARD) + "}"
    assert array_text([]) == "{}"
    # A NUL cannot join them: written one by one, for the server to refuse as before.
    assert array_text(["a\x00b", "c"]) == '{"a\x00b","c"}'


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def test_among_selects_what_in_selects(engine: AsyncEngine) -> None:
    """``among`` and ``pairs_among`` (``= ANY`` of arrays on PostgreSQL) keep the rows an
    ``IN`` list keeps, on either database."""
    data = [(text, number) for number, text in enumerate(AWKWARD)] + [("x", 1), ("x", 2)]
    table = sa.union_all(
        *(
            sa.select(sa.literal(a, sa.String()).label("a"), sa.literal(b).label("b"))
            for a, b in data
        )
    ).subquery("t")
    wanted = [*AWKWARD[::2], "missing"]
    pairs = [("x", 2), (AWKWARD[1], 1), (AWKWARD[2], 0)]
    async with engine.connect() as connection:
        dialect = connection.dialect.name
        for made, reference in [
            (
                among(table.c.a, wanted, sa.String(), dialect),
                table.c.a.in_(wanted),
            ),
            (
                pairs_among((table.c.a, table.c.b), pairs, (sa.String(), sa.Integer()), dialect),
                sa.tuple_(table.c.a, table.c.b).in_(pairs),
            ),
        ]:
            got = (await connection.execute(sa.select(table).where(made))).all()
            expected = (await connection.execute(sa.select(table).where(reference))).all()
            assert sorted(got) == sorted(expected) and got
