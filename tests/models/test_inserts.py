"""Planned inserts (``signoff.models.inserts``: straight to psycopg on PostgreSQL) store what
SQLAlchemy's own ``INSERT`` stores, and a unique key refuses them with the same error."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import Actor, AuditEvent, ChangeEvent, Queue, QueueMembership
from signoff.models.base import new_id
from signoff.models.inserts import MAX_ROWS, insert_alone, insert_rows, insert_then_select
from signoff.models.records import (
    RecordSelect,
    driver_of,
    one_of,
    record_columns,
    select_all_first,
    select_all_on,
    table_of,
)

AUDIT, EVENTS = table_of(AuditEvent), table_of(ChangeEvent)
QUEUES, MEMBERS = table_of(Queue), table_of(QueueMembership)


def _audit(i: int) -> dict[str, Any]:
    return {
        "id": new_id(),
        "action": "approval.approved",
        "actor_id": None,
        "target_type": "proposal",
        "target_id": f"p-{i}",
        "details": {"reason": 'ünïcode "quoted" \\', "n": 2**60, "x": [1.5, None, True]},
        "created_at": clock.now() + timedelta(microseconds=i),
        "position": None,
        "leaf_hash": None,
    }


def _event(i: int) -> dict[str, Any]:
    return {
        "id": new_id(),
        "cursor": None,
        "kind": "proposal.approved",
        "entity_type": "proposal",
        "entity_id": f"p-{i}",
        "entity_version": i,
        "queue_id": None,
        "proposal_id": f"p-{i}",
        "session_key": None,
        "actor_id": None,
        "snapshot": {"state": "QUEUED", "approvalCount": i, "nested": {"k": [i]}},
        "occurred_at": clock.now(),
        "published_at": None,
    }


async def _stored(connection: AsyncConnection, table: sa.Table, ids: list[str]) -> list[Any]:
    found = await connection.execute(sa.select(table).where(table.c.id.in_(ids)))
    return sorted(
        (tuple(v for k, v in row._mapping.items() if k != "id") for row in found), key=repr
    )


@pytest.mark.parametrize(
    ("audit_rows", "event_rows"),
    [(3, 2), (MAX_ROWS + 1, 3 * MAX_ROWS)],
    ids=["values", "arrays"],
)
async def test_planned_inserts_store_what_sqlalchemy_stores(
    sessionmaker: SessionMaker, audit_rows: int, event_rows: int
) -> None:
    """Small batches (a row of parameters each) and large ones (a column's values as an
    array) alike."""
    audits, events = [_audit(i) for i in range(audit_rows)], [_event(i) for i in range(event_rows)]
    events[-1] = {**events[-1], "entity_version": None, "snapshot": {}}
    copies = (
        [{**row, "id": new_id()} for row in audits],
        [{**row, "id": new_id()} for row in events],
    )
    async with sessionmaker() as session:
        connection = await session.connection()
        await insert_rows(connection, [(AUDIT, audits), (EVENTS, events)])
        await connection.execute(sa.insert(AUDIT), copies[0])
        await connection.execute(sa.insert(EVENTS), copies[1])
        await session.commit()
    async with sessionmaker() as session:
        connection = await session.connection()
        for table, planned, plain in ((AUDIT, audits, copies[0]), (EVENTS, events, copies[1])):
            got = await _stored(connection, table, [row["id"] for row in planned])
            expected = await _stored(connection, table, [row["id"] for row in plain])
            assert got == expected and len(got) == len(planned)


@pytest.mark.parametrize("batch", [1, MAX_ROWS + 1], ids=["values", "arrays"])
async def test_a_unique_key_refuses_a_planned_insert_as_sqlalchemy_does(
    sessionmaker: SessionMaker, batch: int
) -> None:
    row = _audit(0)
    async with sessionmaker() as session:
        await insert_rows(await session.connection(), [(AUDIT, [row])])
        await session.commit()
    rows = [*(_audit(i) for i in range(1, batch)), row]
    for insert in (
        lambda c: insert_rows(c, [(AUDIT, rows)]),
        lambda c: c.execute(sa.insert(AUDIT), rows),
    ):
        async with sessionmaker() as session:
            with pytest.raises(IntegrityError):
                await insert(await session.connection())
            await session.rollback()


def _queue(slug: str) -> dict[str, Any]:
    return {
        "id": new_id(),
        "slug": slug,
        "name": slug,
        "claim_ttl_seconds": 60,
        "default_due_seconds": 3600,
        "reminder_percents": [50, 90],
        "created_at": clock.now(),
    }


def _audit_by_id(ids: list[str]) -> RecordSelect:
    def build(dialect: str) -> sa.Select[Any]:
        return sa.select(*record_columns(AuditEvent)).where(one_of(AUDIT.c.id, "keys", dialect))

    return RecordSelect(AuditEvent, "test-audit-by-id", build, {"keys": ids})


def _queue_by_slug(slug: str) -> RecordSelect:
    def build(dialect: str) -> sa.Select[Any]:
        return sa.select(*record_columns(Queue)).where(QUEUES.c.slug == sa.bindparam("slug"))

    return RecordSelect(Queue, "test-queue-by-slug", build, {"slug": slug})


def _counting(engine: AsyncEngine) -> list[str]:
    sent: list[str] = []

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def count(_c: Any, _cu: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    return sent


async def test_rows_then_a_read_of_other_tables_answer_as_apart(
    engine: AsyncEngine, sessionmaker: SessionMaker
) -> None:
    """The rows go in the read's own statement (on PostgreSQL) where it reads none of their
    tables: the same rows stored and the same records read as the inserts and the read
    sent apart."""
    sent, now = _counting(engine), clock.now()
    rows = {name: ([_audit(0), _audit(1)], [_event(0)]) for name in ("together", "apart")}
    found: dict[str, list[dict[str, Any]]] = {}
    for name, (audits, events) in rows.items():
        async with sessionmaker() as session:
            connection = await session.connection()
            queue = {**_queue(f"q-{name}"), "created_at": now}
            await insert_rows(connection, [(QUEUES, [queue])])
            sent.clear()
            batches = [(AUDIT, audits), (EVENTS, events)]
            read = _queue_by_slug(f"q-{name}")
            if name == "together":
                (records,) = await insert_then_select(connection, batches, [read])
                assert len(sent) == (1 if engine.dialect.name == "postgresql" else 3)
            else:
                await insert_rows(connection, batches)
                (records,) = await select_all_on(connection, [read])
            found[name] = [{**vars(r), "id": None, "slug": None, "name": None} for r in records]
            await session.commit()
        async with sessionmaker() as session:
            stored = await _stored(await session.connection(), AUDIT, [a["id"] for a in audits])
            assert len(stored) == 2
    assert found["together"] == found["apart"] and len(found["together"]) == 1


async def test_a_read_of_the_rows_tables_sees_the_rows(sessionmaker: SessionMaker) -> None:
    """A read that names an inserted table goes after the rows, in a statement of its own."""
    audits = [_audit(0), _audit(1)]
    async with sessionmaker() as session:
        connection = await session.connection()
        ids = [row["id"] for row in audits]
        (found,) = await insert_then_select(
            connection, [(AUDIT, audits), (EVENTS, [_event(0)])], [_audit_by_id(ids)]
        )
        assert sorted(record.id for record in found) == sorted(ids)
        await session.rollback()


async def test_a_child_goes_in_one_statement_with_its_parent(sessionmaker: SessionMaker) -> None:
    """Foreign keys are checked once every part of the statement has run."""
    queue = _queue("parent")
    membership = {"queue_id": queue["id"], "actor_id": new_id(), "created_at": clock.now()}
    actor = {
        "id": membership["actor_id"],
        "name": "child",
        "role": "REVIEWER",
        "created_at": clock.now(),
        "disabled_at": None,
        "slack_user_id": None,
        "person": None,
    }
    async with sessionmaker() as session:
        await insert_rows(
            await session.connection(),
            [(QUEUES, [queue]), (table_of(Actor), [actor]), (MEMBERS, [membership])],
        )
        await session.commit()
    async with sessionmaker() as session:
        assert await _stored(await session.connection(), QUEUES, [queue["id"]])


async def test_a_refused_row_refuses_the_read_it_goes_with(sessionmaker: SessionMaker) -> None:
    row = _audit(0)
    async with sessionmaker() as session:
        await insert_rows(await session.connection(), [(AUDIT, [row])])
        await session.commit()
    async with sessionmaker() as session:
        with pytest.raises(IntegrityError):
            await insert_then_select(
                await session.connection(),
                [(EVENTS, [_event(0)]), (AUDIT, [row])],
                [_queue_by_slug("none")],
            )
        await session.rollback()


async def _autocommit(connection: AsyncConnection) -> bool | None:
    """psycopg's autocommit flag under ``connection`` (``None`` off PostgreSQL)."""
    if connection.dialect.name != "postgresql":
        return None
    return bool((await driver_of(connection)).autocommit)


async def test_rows_alone_commit_on_their_own_and_store_what_a_transaction_stores(
    sessionmaker: SessionMaker,
) -> None:
    """On PostgreSQL, before the transaction has sent anything: one statement, committed
    as it runs (another session sees the rows before this one commits), the connection
    in a transaction again afterwards. Elsewhere nothing is sent."""
    alone = ([_audit(0)], [_event(0)])
    apart = ([{**alone[0][0], "id": new_id()}], [{**alone[1][0], "id": new_id()}])
    async with sessionmaker() as session:
        connection = await session.connection()
        sent = await insert_alone(connection, [(AUDIT, alone[0]), (EVENTS, alone[1])])
        assert sent is (connection.dialect.name == "postgresql")
        assert await _autocommit(connection) in (False, None)
        if sent:
            async with sessionmaker() as other:
                seen = await _stored(await other.connection(), AUDIT, [alone[0][0]["id"]])
                assert len(seen) == 1
        else:  # SQLite: this session holds the write lock, which another would wait for
            await insert_rows(connection, [(AUDIT, alone[0]), (EVENTS, alone[1])])
        await insert_rows(connection, [(AUDIT, apart[0]), (EVENTS, apart[1])])
        await session.commit()
    async with sessionmaker() as session:
        connection = await session.connection()
        for table, index in ((AUDIT, 0), (EVENTS, 1)):
            got = await _stored(connection, table, [alone[index][0]["id"]])
            expected = await _stored(connection, table, [apart[index][0]["id"]])
            assert got == expected and len(got) == 1


async def test_rows_alone_go_in_the_transaction_once_it_has_sent_something(
    sessionmaker: SessionMaker,
) -> None:
    async with sessionmaker() as session:
        connection = await session.connection()
        await insert_rows(connection, [(AUDIT, [_audit(0)])])
        assert await insert_alone(connection, [(AUDIT, [_audit(1)])]) is False
        # More than one statement's worth is never sent alone either.
        big = [_audit(i) for i in range(MAX_ROWS + 1)]
        await session.rollback()
        connection = await session.connection()
        assert await insert_alone(connection, [(AUDIT, big), (EVENTS, [_event(0)])]) is False
        await session.rollback()


async def test_rows_alone_refused_leave_nothing_and_a_transaction_behind(
    sessionmaker: SessionMaker,
) -> None:
    row = _audit(0)
    async with sessionmaker() as session:
        await insert_rows(await session.connection(), [(AUDIT, [row])])
        await session.commit()
    event_row = _event(0)
    async with sessionmaker() as session:
        connection = await session.connection()
        if connection.dialect.name != "postgresql":
            return
        with pytest.raises(IntegrityError):
            await insert_alone(connection, [(EVENTS, [event_row]), (AUDIT, [row])])
        assert await _autocommit(connection) is False
        await session.rollback()
    async with sessionmaker() as session:
        assert await _stored(await session.connection(), EVENTS, [event_row["id"]]) == []


async def test_reads_first_go_outside_the_transaction_and_leave_it_to_begin(
    sessionmaker: SessionMaker,
) -> None:
    queue = _queue("read-first")
    async with sessionmaker() as session:
        await insert_rows(await session.connection(), [(QUEUES, [queue])])
        await session.commit()
    async with sessionmaker() as session:
        connection = await session.connection()
        (found,) = await select_all_first(connection, [_queue_by_slug("read-first")])
        assert [record.id for record in found] == [queue["id"]]
        if connection.dialect.name == "postgresql":
            driver = await driver_of(connection)
            assert driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            assert driver.autocommit is False
        await session.rollback()
