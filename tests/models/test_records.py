"""Reads by key (``signoff.models.records``): on PostgreSQL they go to psycopg directly,
several in one pipeline; what they give must be what SQLAlchemy gives, and a failure
must be handled as any statement's is."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite
import psycopg
import pytest
from sqlalchemy import Integer, bindparam, event, select, table, text
from sqlalchemy import column as table_column
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import SQLModel

from signoff.constants import JSON_LARGE_NUMBERS_KEYWORD
from signoff.database import SessionMaker, create_sessionmaker, is_unreachable, read_only
from signoff.models import (
    Actor,
    Approval,
    HumanTask,
    Proposal,
    ProposalRevision,
    Queue,
    Role,
    Target,
)
from signoff.models.records import (
    Along,
    RecordSelect,
    RowsWhere,
    Via,
    driver_of,
    read_all,
    record_columns,
    rows_where,
    select_all,
    select_along,
    table_of,
)
from tests.conftest import PG_URL, requires_postgres
from tests.helpers import GraphQLClient, build_world

MODELS: list[type[SQLModel]] = [Actor, Queue, Target, Proposal, HumanTask, Approval]


async def _world_with_every_kind(gql: GraphQLClient) -> None:
    """Actors, a queue, a target, proposals with tasks, an approval and a revision."""
    # A schema that opts in to integers beyond 2^53: one beyond 64 bits is stored.
    schema = {"type": "object", JSON_LARGE_NUMBERS_KEYWORD: True}
    world = await build_world(gql, required_approvals=2, inputSchema=schema)
    first = (await world.propose({"amount": 2**70, "currency": "EUR"}))["proposal"]
    await world.decide(world.reviewers[0], first)
    await world.propose({"amount": 5, "currency": "EUR", "note": "é \u2028"})


@pytest.fixture
async def reads(gql: GraphQLClient, engine: AsyncEngine) -> SessionMaker:
    """Read sessions on a database holding every kind of row."""
    await _world_with_every_kind(gql)
    return create_sessionmaker(read_only(engine))


def _typed(value: Any) -> tuple[type, Any]:
    if isinstance(value, datetime):
        return datetime, (value.astimezone(UTC), value.utcoffset())
    return type(value), value


async def test_reads_by_key_give_what_sqlalchemy_gives(
    engine: AsyncEngine, reads: SessionMaker
) -> None:
    on_postgres = engine.dialect.name == "postgresql"
    for model in MODELS:
        table = table_of(model)
        async with reads() as session:
            connection = await session.connection()
            if on_postgres:
                # Times come back in the connection's zone: records give them in UTC.
                await connection.execute(text("SET TIME ZONE 'Pacific/Chatham'"))
            try:
                expected = (await connection.execute(select(table))).mappings().all()
                ids = [row["id"] for row in expected]
                (found,) = await read_all(session, [RowsWhere(model, "id", ids)])
            finally:
                if on_postgres:
                    await connection.execute(text("RESET TIME ZONE"))
        assert expected, f"no {table.name} row to compare"
        by_id = {record.id: record for record in found}
        for row in expected:
            record = by_id[row["id"]]
            for column in table.columns:
                value = getattr(record, column.key)
                assert _typed(value) == _typed(row[column.key]), f"{table.name}.{column.key}"
                if isinstance(value, datetime):
                    assert value.utcoffset() == timedelta(0), f"{table.name}.{column.key}"


async def test_json_columns_are_decoded_when_first_read_and_once(reads: SessionMaker) -> None:
    async with reads() as session:
        connection = await session.connection()
        rows = (await connection.execute(select(Proposal.id, Proposal.payload))).all()
        (found,) = await read_all(session, [RowsWhere(Proposal, "id", [id_ for id_, _ in rows])])
    # Picked by id, not by looking at payloads (which decodes them): the rows come in no
    # set order (a decision's update can move the first proposal's row after the second).
    noted = next(id_ for id_, payload in rows if "note" in payload)
    other = next(r for r in found if r.id == noted)
    assert "payload" not in vars(other) and "subject" not in vars(other)
    payload = other.payload
    assert payload["note"] == "é \u2028"
    assert vars(other)["payload"] is payload and other.payload is payload
    assert "subject" not in vars(other)
    record = next(r for r in found if r is not other)
    assert record.payload.get("note") is None


async def test_several_reads_answer_each_in_order_and_count_as_statements(
    engine: AsyncEngine, reads: SessionMaker
) -> None:
    async with reads() as session:
        connection = await session.connection()
        proposals = (await connection.execute(select(Proposal.id, Proposal.target_id))).all()
    ids = [p.id for p in proposals]
    wanted = [
        RowsWhere(Target, "id", [p.target_id for p in proposals]),
        RowsWhere(HumanTask, "proposal_id", ids),
        RowsWhere(Approval, "proposal_id", ids, "created_at"),
        RowsWhere(ProposalRevision, "proposal_id", ids, "revision"),  # none: amended never
        RowsWhere(Actor, "id", []),
    ]
    # Metrics and tests.helpers.statements_sent count statements with this listener.
    sent: list[str] = []
    cursors: list[Any] = []

    def note(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)
        cursors.append(cursor)

    event.listen(engine.sync_engine, "before_cursor_execute", note)
    try:
        async with reads() as session:
            targets, tasks, approvals, revisions, actors = await read_all(session, wanted)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", note)
    assert len(sent) == len(wanted)
    if engine.dialect.name == "postgresql":
        # psycopg's own cursors, in one pipeline (SQLAlchemy's path hands its listeners
        # its adapter of the cursor instead)
        assert all(isinstance(c, psycopg.AsyncCursor) for c in cursors)
    assert {t.id for t in targets} == {p.target_id for p in proposals}
    assert sorted(t.proposal_id for t in tasks) == sorted(ids)
    assert len(approvals) == 1 and approvals[0].proposal_id in ids
    assert revisions == [] and actors == []


async def test_a_read_via_another_table_gives_the_rows_it_reaches(reads: SessionMaker) -> None:
    async with reads() as session:
        connection = await session.connection()
        pairs = (await connection.execute(select(Approval.proposal_id, Approval.approver_id))).all()
        undecided = (
            (await connection.execute(select(Proposal.id).where(Proposal.approval_count == 0)))
            .scalars()
            .all()
        )
        approvers = Via(Approval, "approver_id", "proposal_id")
        reached, none = await read_all(
            session,
            [
                RowsWhere(Actor, "id", [p for p, _ in pairs], via=approvers),
                RowsWhere(Actor, "id", list(undecided), via=approvers),
            ],
        )
    assert pairs and undecided
    assert sorted(a.id for a in reached) == sorted({a for _, a in pairs})
    assert none == []


AWKWARD_NAMES = [
    'a "quoted" name',
    "back\\slash\\",
    "comma, and {braces}",
    "  spaces  ",
    "NULL",
    "",
    "é \u2028 ünïcode",
    "'single'",
]


async def test_keys_with_any_character_find_exactly_their_rows(
    engine: AsyncEngine, gql: GraphQLClient
) -> None:
    """On PostgreSQL the keys travel as the text of an array (``arrays.text_array``):
    quotes, backslashes, commas, braces and spaces in a key are its own characters."""
    async with create_sessionmaker(engine)() as session:
        session.add_all(Actor(name=name, role=Role.REVIEWER) for name in AWKWARD_NAMES)
        session.add(Actor(name="a quoted name", role=Role.REVIEWER))  # near, not equal
        await session.commit()
    cursors: list[Any] = []

    def note(_conn: Any, cursor: Any, *_: Any) -> None:
        cursors.append(cursor)

    wanted = [RowsWhere(Actor, "name", AWKWARD_NAMES)]
    wanted += [RowsWhere(Actor, "name", [name]) for name in AWKWARD_NAMES]
    event.listen(engine.sync_engine, "before_cursor_execute", note)
    try:
        async with create_sessionmaker(read_only(engine))() as session:
            (every, *alone) = await read_all(session, wanted)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", note)
    if engine.dialect.name == "postgresql":
        # Through psycopg alone: a text the server refused would have been read again
        # through SQLAlchemy (more statements, and its cursors).
        assert len(cursors) == len(wanted)
        assert all(isinstance(c, psycopg.AsyncCursor) for c in cursors)
    assert sorted(a.name for a in every) == sorted(AWKWARD_NAMES)
    assert [[a.name for a in found] for found in alone] == [[name] for name in AWKWARD_NAMES]


async def test_a_write_transaction_reads_its_own_writes(
    engine: AsyncEngine, gql: GraphQLClient
) -> None:
    async with create_sessionmaker(engine)() as session:
        queue = Queue(slug="uncommitted", name="Not yet committed")
        session.add(queue)
        await session.flush()
        (found,) = await read_all(session, [RowsWhere(Queue, "id", [queue.id])])
        assert [q.slug for q in found] == ["uncommitted"]
        await session.rollback()


requires_sqlite = pytest.mark.skipif(PG_URL is not None, reason="SQLite's one trip")


@requires_sqlite
@pytest.mark.parametrize("transaction", [False, True])
async def test_sqlite_reads_go_to_the_connections_thread_in_one_trip(
    engine: AsyncEngine, reads: SessionMaker, monkeypatch: pytest.MonkeyPatch, transaction: bool
) -> None:
    """On SQLite a call's reads make one trip to the connection's thread between them,
    and still reach ``before_cursor_execute`` listeners, once each."""
    async with reads() as session:
        connection = await session.connection()
        ids = [id_ for (id_,) in await connection.execute(select(Proposal.id))]
    wanted = [
        RowsWhere(Proposal, "id", ids),
        RowsWhere(HumanTask, "proposal_id", ids),
        RowsWhere(Approval, "proposal_id", ids, "created_at"),
        RowsWhere(Actor, "id", ids, via=Via(Approval, "approver_id", "proposal_id")),
    ]
    trips: list[str] = []
    run = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(fn, "__name__", repr(fn)))
        return await run(self, fn, *args, **kwargs)

    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    sessions = create_sessionmaker(engine) if transaction else reads
    async with sessions() as session:
        await session.connection()  # a write session's BEGIN IMMEDIATE, not counted
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        event.listen(engine.sync_engine, "before_cursor_execute", note)
        try:
            proposals, tasks, approvals, approvers = await read_all(session, wanted)
        finally:
            event.remove(engine.sync_engine, "before_cursor_execute", note)
            monkeypatch.undo()
        await session.rollback()
    assert trips == ["_read_all"]
    assert len(sent) == len(wanted)
    assert sorted(p.id for p in proposals) == sorted(ids)
    assert sorted(t.proposal_id for t in tasks) == sorted(ids)
    assert len(approvals) == 1 and approvals[0].proposal_id in ids
    assert [a.id for a in approvers] == [approvals[0].approver_id]


@requires_sqlite
async def test_a_sqlite_read_that_fails_in_its_trip_fails_as_any_statement_does(
    reads: SessionMaker,
) -> None:
    """A statement sqlite3 refuses on the thread is read again through SQLAlchemy, which
    raises it as it raises any statement's failure."""

    def build(_dialect: str) -> Any:
        missing = table("no_such_table", table_column("id"))
        return select(missing.c.id).where(missing.c.id == bindparam("id"))

    failing = RecordSelect(Queue, "a read of a table that is not there", build, {"id": "x"})
    fine = RecordSelect(Queue, "every queue", lambda _d: select(*record_columns(Queue)), {})
    async with reads() as session:
        with pytest.raises(OperationalError, match="no_such_table"):
            await select_all(session, [fine, failing])
        (queues,) = await select_all(session, [fine])
    assert queues


@requires_postgres
@pytest.mark.parametrize("transaction", ["autocommit read", "write transaction"])
async def test_a_connection_the_server_closed_fails_as_any_statement_does(
    engine: AsyncEngine, reads: SessionMaker, transaction: str
) -> None:
    sessions = reads if transaction == "autocommit read" else create_sessionmaker(engine)
    async with sessions() as session:
        connection = await session.connection()
        pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        async with engine.connect() as other:
            await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as failed:
            await rows_where(session, Actor, "id", ["a"])
        assert is_unreachable(failed.value)
    async with sessions() as session:  # the pool replaced the dead connection
        assert len(await rows_where(session, Queue, "id", [])) == 0
        assert await session.scalar(text("SELECT pg_backend_pid()")) != pid


@requires_postgres
async def test_a_read_cancelled_mid_pipeline_never_returns_its_connection_to_the_pool(
    engine: AsyncEngine, reads: SessionMaker
) -> None:
    slow = RowsWhere(Actor, "id", ["a"])
    async with reads() as session:
        connection = await session.connection()
        raw = (await connection.get_raw_connection()).driver_connection
        assert isinstance(raw, psycopg.AsyncConnection)
        # pg_sleep in a statement of the pipeline's kind would need a new kind: hold the
        # connection instead with a lock that the read waits for.
        async with engine.connect() as holder:
            await holder.execute(text("BEGIN"))
            await holder.execute(text("LOCK TABLE actors IN ACCESS EXCLUSIVE MODE"))
            read = asyncio.create_task(read_all(session, [slow, slow]))
            await asyncio.sleep(0.3)
            read.cancel()
            with pytest.raises(asyncio.CancelledError):
                await read
            await holder.rollback()
        assert connection.invalidated
    async with reads() as session:
        assert len(await rows_where(session, Actor, "id", ["a"])) == 0


@requires_postgres
async def test_a_write_transaction_reads_through_psycopg_and_fails_as_any_statement_does(
    engine: AsyncEngine, reads: SessionMaker
) -> None:
    writes = create_sessionmaker(engine)
    async with writes() as session:
        sent: list[Any] = []

        def note(conn: Any, cursor: Any, *args: Any) -> None:
            sent.append(cursor)

        event.listen(engine.sync_engine, "before_cursor_execute", note)
        try:
            await read_all(session, [RowsWhere(Actor, "id", ["a"]), RowsWhere(Queue, "id", [])])
        finally:
            event.remove(engine.sync_engine, "before_cursor_execute", note)
        assert len(sent) == 2 and all(isinstance(c, psycopg.AsyncCursor) for c in sent)
    async with writes() as session:
        # A read that fails ends the transaction: it is raised as SQLAlchemy raises a
        # statement's failure, never read again in the aborted transaction.
        await (await session.connection()).execute(text("SET LOCAL statement_timeout = 200"))
        async with engine.connect() as holder:
            await holder.execute(text("BEGIN"))
            await holder.execute(text("LOCK TABLE actors IN ACCESS EXCLUSIVE MODE"))
            with pytest.raises(DBAPIError) as failed:
                await rows_where(session, Actor, "id", ["a"])
            await holder.rollback()
        assert isinstance(failed.value.orig, psycopg.errors.QueryCanceled)
        await session.rollback()
        assert len(await rows_where(session, Actor, "id", ["a"])) == 0


@requires_postgres
async def test_the_driver_is_the_one_sqlalchemy_hands_out_and_reconnects_as_it_does(
    engine: AsyncEngine,
) -> None:
    """``driver_of`` takes psycopg's connection as it is while SQLAlchemy's holds one, and
    through ``get_raw_connection`` (which reconnects) once that one was invalidated."""
    async with engine.connect() as connection:
        raw = (await connection.get_raw_connection()).driver_connection
        assert await driver_of(connection) is raw
        await connection.invalidate()
        assert connection.invalidated
        again = await driver_of(connection)
        assert again is not raw and not again.closed
        assert again is (await connection.get_raw_connection()).driver_connection


APPROVERS = Via(Approval, "approver_id", "proposal_id")
# A page's relations: targets, tasks, approvals and their approvers.
ALONG = [
    Along(Target, "id", "target_id"),
    Along(HumanTask, "proposal_id", "id"),
    Along(Approval, "proposal_id", "id", "created_at"),
    Along(Actor, "id", "id", via=APPROVERS),
]


def _first_proposals(limit: int) -> RecordSelect:
    """The first ``limit`` proposals by id, as a page selects them."""

    def build(dialect: str) -> Any:
        columns = record_columns(Proposal)
        return select(*columns).order_by(Proposal.id).limit(bindparam("limit", type_=Integer))

    return RecordSelect(Proposal, "first proposals", build, {"limit": limit})


async def test_reads_along_a_select_give_what_reads_by_its_keys_give_in_one_round_trip(
    engine: AsyncEngine, reads: SessionMaker
) -> None:
    sent: list[Any] = []

    def note(_conn: Any, cursor: Any, *_: Any) -> None:
        sent.append(cursor)

    event.listen(engine.sync_engine, "before_cursor_execute", note)
    try:
        async with reads() as session:
            found = await select_along(session, _first_proposals(2), ALONG)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", note)
    if engine.dialect.name != "postgresql":
        # No pipeline nor snapshot across statements: the caller reads by keys.
        assert found is None and sent == []
        return
    assert found is not None
    proposals, along = found
    assert len(proposals) == 2 and len(sent) == 1 + len(ALONG)
    assert all(isinstance(c, psycopg.AsyncCursor) for c in sent)
    ids = [p.id for p in proposals]
    async with reads() as session:
        expected = await read_all(
            session,
            [
                RowsWhere(Target, "id", [p.target_id for p in proposals]),
                RowsWhere(HumanTask, "proposal_id", ids),
                RowsWhere(Approval, "proposal_id", ids, "created_at"),
                RowsWhere(Actor, "id", ids, via=APPROVERS),
            ],
        )
    assert [[vars(r) for r in rows] for rows in along] == [
        [vars(r) for r in rows] for rows in expected
    ]
    assert all(expected), "every kind of relation is read"


@requires_postgres
async def test_reads_along_a_select_that_fails_leave_the_connection_idle_in_autocommit(
    reads: SessionMaker,
) -> None:
    """A failure in the snapshot's transaction is rolled back: the caller reads again
    through SQLAlchemy, which raises the failure as it raises any statement's."""
    async with reads() as session:
        # PostgreSQL refuses a negative LIMIT when it runs the statement.
        assert await select_along(session, _first_proposals(-1), ALONG) is None
        driver = await driver_of(await session.connection())
        assert driver.autocommit
        assert driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        found = await select_along(session, _first_proposals(1), ALONG)
        assert found is not None and len(found[0]) == 1
