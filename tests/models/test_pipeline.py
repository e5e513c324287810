"""Reads through libpq's pipeline (``signoff.models.pipeline``): statement texts as libpq
takes them, each statement prepared once per connection, and a failure that leaves the
connection as it found it (what the reads give is checked in ``test_records.py``)."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker, create_sessionmaker, read_only
from signoff.models import Actor, Queue
from signoff.models.pipeline import RawStatement, StatementFailed, raw_statement, read
from signoff.models.records import RowsWhere, driver_of, read_all
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world


def test_named_placeholders_become_numbered_and_a_doubled_percent_one() -> None:
    converted = raw_statement(
        "SELECT a FROM t WHERE b = %(key)s AND c LIKE 'x%%' AND d = ANY(%(keys)s) AND e = %(key)s"
    )
    assert converted == RawStatement(
        b"SELECT a FROM t WHERE b = $1 AND c LIKE 'x%' AND d = ANY($2) AND e = $1",
        ("key", "keys"),
    )


@pytest.mark.parametrize("sql", ["SELECT %s", "SELECT %(key)b", "SELECT 5 % 2"])
def test_other_placeholders_are_not_converted(sql: str) -> None:
    assert raw_statement(sql) is None


@pytest.fixture
async def reads(gql: GraphQLClient, engine: AsyncEngine) -> SessionMaker:
    await build_world(gql)
    return create_sessionmaker(read_only(engine))


async def _ours(session: AsyncSession) -> set[str]:
    connection = await session.connection()
    rows = await connection.execute(text("SELECT name FROM pg_prepared_statements"))
    return {name for (name,) in rows if name.startswith("_signoff_read_")}


@requires_postgres
async def test_a_statement_is_prepared_once_per_connection(reads: SessionMaker) -> None:
    wanted = [RowsWhere(Actor, "id", ["a"]), RowsWhere(Queue, "id", [])]
    async with reads() as session:  # one connection throughout
        assert await read_all(session, wanted) == [[], []]
        prepared = await _ours(session)
        for _ in range(3):
            assert await read_all(session, wanted) == [[], []]
        assert len(prepared) >= 2 and await _ours(session) == prepared


@requires_postgres
async def test_a_failed_statement_leaves_the_connection_idle_out_of_pipeline_mode(
    reads: SessionMaker,
) -> None:
    async with reads() as session:
        driver = await driver_of(await session.connection())
        assert driver.autocommit
        good = RawStatement(b"SELECT $1::int", ("n",))
        bad = RawStatement(b"SELECT 1 / $1::int", ("n",))
        with pytest.raises(StatementFailed, match="division by zero"):
            await read(
                driver,
                [(good, {"n": 1}), (bad, {"n": 0}), (good, {"n": 2})],
                before=[b"BEGIN READ ONLY"],
                after=[b"COMMIT"],
            )
        assert driver.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
        # The transaction the failure aborted is rolled back by its caller (``records``).
        await driver.rollback()
        assert driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        # Nothing more is prepared on this connection, and reads still answer.
        answers = await read(driver, [(good, {"n": 3})])
        assert [answer.rows for answer in answers] == [[(3,)]]


@requires_postgres
async def test_answers_that_come_in_many_pieces_are_read_whole(reads: SessionMaker) -> None:
    # Each answer is larger than the server's send buffer, so the client takes them in
    # over many socket reads before the Sync comes.
    long = RawStatement(b"SELECT repeat($1::text, $2::int), $2::int", ("text", "times"))
    wanted = [(long, {"text": "ab", "times": 50_000 + n}) for n in range(4)]
    async with reads() as session:
        driver = await driver_of(await session.connection())
        answers = await read(driver, wanted)
        assert [answer.rows for answer in answers] == [
            [("ab" * (50_000 + n), 50_000 + n)] for n in range(4)
        ]
        assert driver.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
