"""Planned inserts (``signoff.models.inserts``: straight to psycopg on PostgreSQL) store what
SQLAlchemy's own ``INSERT`` stores, and a unique key refuses them with the same error."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import AuditEvent, ChangeEvent
from signoff.models.base import new_id
from signoff.models.inserts import MAX_ROWS, insert_rows
from signoff.models.records import table_of

AUDIT, EVENTS = table_of(AuditEvent), table_of(ChangeEvent)


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
