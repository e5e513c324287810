"""The change feed in the database: stamping cursors in commit order, reading, pruning.

Writers insert events unstamped; cursors are handed out after commit, one run at a time
across processes, so no event ever appears below a cursor a subscriber already has,
cursors are dense, and one entity's events are numbered in version order whatever the
writers' clocks. docs/design.md section 8.2 says why each step of a run is needed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import delete, func, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import FEED_PAGE_SIZE
from signoff.events import auditlog
from signoff.models import ChangeEvent, ChangeFeedState, Draft, HumanTask, Proposal
from signoff.models.arrays import among, array_parameter
from signoff.models.records import as_records, records, rows_where, table_of

STATE_ID = 1
EVENTS = table_of(ChangeEvent)
STATE = table_of(ChangeFeedState)

# Built once, as every stamping round (one per commit, when commits are few) reads them:
# building them cost a tenth of a round.
_LAST_CURSOR = (
    sa.select(STATE.c.last_cursor, STATE.c.audit_size)
    .where(STATE.c.id == STATE_ID)
    .with_for_update()
)
_PENDING = sa.select(EVENTS).where(EVENTS.c.cursor.is_(None))
_ANY_PENDING = sa.select(EVENTS.c.id).where(EVENTS.c.cursor.is_(None)).limit(1)
# Either kind of pending in one statement: every process's upkeep asks each tick.
_ANY_PENDING_OR_AUDIT = sa.select(sa.or_(_ANY_PENDING.exists(), auditlog.ANY_PENDING.exists()))
_PENDING_PAGE = _PENDING.order_by(EVENTS.c.occurred_at, EVENTS.c.id).limit(
    sa.bindparam("limit", type_=sa.Integer)
)
# The cursors as arrays, one row each by ``unnest`` (PostgreSQL), or one statement run per
# event (SQLite, in process): the statements are the same whatever the batch, so they are
# compiled once (a CASE per batch was compiled anew, a fifth of a delivery worker's time).
_STAMPED = (
    sa.func.unnest(
        array_parameter("event_ids", sa.String()),
        array_parameter("event_cursors", sa.BigInteger()),
    )
    .table_valued("id", "cursor")
    .render_derived(name="stamped_rows")
)
_STAMP_ARRAYS = update(EVENTS).where(EVENTS.c.id == _STAMPED.c.id).values(cursor=_STAMPED.c.cursor)
_STAMP_EACH = (
    update(EVENTS)
    .where(EVENTS.c.id == sa.bindparam("b_id"))
    .values(cursor=sa.bindparam("b_cursor"))
)
_ADVANCE = (
    update(STATE)
    .where(STATE.c.id == STATE_ID)
    .values(
        last_cursor=sa.bindparam("new_last_cursor", type_=sa.BigInteger),
        audit_size=sa.bindparam("new_audit_size", type_=sa.BigInteger),
    )
)
# PostgreSQL runs a data-modifying WITH whether or not the statement reads it: one round
# trip, on the way from a commit to its frames.
_ADVANCE_STAMPING = _ADVANCE.add_cte(_STAMP_ARRAYS.cte("stamped"))
_ADVANCE_POSITIONING = _ADVANCE.add_cte(auditlog.POSITION_ARRAYS.cte("positioned"))
_ADVANCE_BOTH = _ADVANCE_STAMPING.add_cte(auditlog.POSITION_ARRAYS.cte("positioned"))


async def feed_state(session: AsyncSession, *, lock: bool = False) -> ChangeFeedState:
    """The feed's counters, created on first use; ``lock`` serialises stampers."""
    stmt = select(ChangeFeedState).where(ChangeFeedState.id == STATE_ID)
    if lock:
        stmt = stmt.with_for_update()
    state = (await session.exec(stmt.execution_options(populate_existing=True))).first()
    if state is not None:
        return state
    insert = pg_insert if _dialect(session) == "postgresql" else sqlite_insert
    await session.exec(
        insert(ChangeFeedState)
        .values(id=STATE_ID, last_cursor=0, pruned_through=0, audit_size=0)
        .on_conflict_do_nothing(index_elements=["id"])
    )
    return (await session.exec(stmt.execution_options(populate_existing=True))).one()


def _dialect(session: AsyncSession) -> str:
    bind: Any = session.get_bind()
    return str(bind.dialect.name)


async def has_pending(session: AsyncSession, *, audit_log: bool = True) -> bool:
    """Whether any committed event waits for its cursor, or (``audit_log``) audit record
    for its position (cheap, takes no lock)."""
    connection = await session.connection()
    if audit_log:
        return bool((await connection.execute(_ANY_PENDING_OR_AUDIT)).scalar())
    return (await connection.execute(_ANY_PENDING)).first() is not None


async def stamp_pending(
    session: AsyncSession, limit: int = FEED_PAGE_SIZE, *, audit_log: bool = True
) -> list[ChangeEvent]:
    """Give committed, unstamped events the next cursors; the caller commits, then publishes.

    At most ``limit`` events plus the other pending events of their entities, so that
    one entity's events are stamped together, in version order. Committed audit records
    get their positions in the same run (``auditlog.positions``), unless the log is off
    (``SIGNOFF_AUDIT_LOG=0``): they then wait for a run with it on.
    """
    last_cursor, audit_size = await _locked_state(session)
    connection = await session.connection()
    new_audit_size, positioned = (
        await auditlog.positions(connection, audit_size) if audit_log else (audit_size, None)
    )
    batch = await _pending(session, limit=limit)
    if len(batch) >= limit:
        batch += await _rest_of_their_entities(session, batch)
    pending = in_entity_order(sorted(batch, key=lambda e: (e.occurred_at, e.id)))
    cursors = list(range(last_cursor + 1, last_cursor + 1 + len(pending)))
    advance = {"new_last_cursor": last_cursor + len(pending), "new_audit_size": new_audit_size}
    if not pending and positioned is None:
        return []
    if connection.dialect.name == "postgresql":
        params: dict[str, Any] = dict(advance)
        if pending:
            params |= {"event_ids": [e.id for e in pending], "event_cursors": cursors}
        if positioned is not None:
            params |= positioned.arrays()
        if not pending:
            statement = _ADVANCE_POSITIONING
        else:
            statement = _ADVANCE_STAMPING if positioned is None else _ADVANCE_BOTH
        await connection.execute(statement, params)
    else:
        # Core statements on records, not ORM instances and a flush: on SQLite this runs
        # in every writer's transaction, where the ORM's bookkeeping was most of its cost.
        if positioned is not None:
            await connection.execute(auditlog.POSITION_EACH, positioned.each())
        if pending:
            rows = [{"b_id": e.id, "b_cursor": c} for e, c in zip(pending, cursors, strict=True)]
            await connection.execute(_STAMP_EACH, rows)
        await connection.execute(_ADVANCE, advance)
    for event, cursor in zip(pending, cursors, strict=True):
        event.cursor = cursor
    return pending


async def _locked_state(session: AsyncSession) -> tuple[int, int]:
    """The last cursor handed out and the audit log's size, with the state row locked until
    commit (``FOR UPDATE`` on PostgreSQL; SQLite's write lock is held already): stampers
    run one at a time."""
    connection = await session.connection()
    row = (await connection.execute(_LAST_CURSOR)).first()
    if row is None:  # the feed's first use
        state = await feed_state(session, lock=True)
        return state.last_cursor, state.audit_size
    return int(row.last_cursor), int(row.audit_size)


async def _pending(
    session: AsyncSession, *where: Any, limit: int | None = None
) -> list[ChangeEvent]:
    """Committed, unstamped events in the writers' clock order, as records."""
    connection = await session.connection()
    if not where and limit is not None:
        return records(ChangeEvent, await connection.execute(_PENDING_PAGE, {"limit": limit}))
    stmt = _PENDING.where(*where).order_by(EVENTS.c.occurred_at, EVENTS.c.id).limit(limit)
    return records(ChangeEvent, await connection.execute(stmt))


async def _rest_of_their_entities(
    session: AsyncSession, batch: Sequence[ChangeEvent]
) -> list[ChangeEvent]:
    """The pending events, outside ``batch``, of the versioned entities that ``batch`` has."""
    entities = {_entity(e) for e in batch if e.entity_version is not None}
    if not entities:
        return []
    taken = {e.id for e in batch}
    ids = sorted({entity_id for _, entity_id in entities})
    rows = await _pending(session, among(EVENTS.c.entity_id, ids, sa.String(), _dialect(session)))
    return [e for e in rows if e.id not in taken and _entity(e) in entities]


def in_entity_order(events: Sequence[ChangeEvent]) -> list[ChangeEvent]:
    """``events`` in their order, except that each entity's versioned events trade places
    among themselves into version order (stable: equal versions keep their order)."""
    places: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        if event.entity_version is not None:
            places[_entity(event)].append(index)
    ordered = list(events)
    for indexes in places.values():
        by_version = sorted((events[i] for i in indexes), key=lambda e: e.entity_version or 0)
        for index, event in zip(indexes, by_version, strict=True):
            ordered[index] = event
    return ordered


def _entity(event: ChangeEvent) -> tuple[str, str]:
    return (event.entity_type, event.entity_id)


# The objects a change event's frame can show, by the key ``Change.written`` uses.
_WRITTEN: dict[str, type[SQLModel]] = {"proposal": Proposal, "task": HumanTask, "draft": Draft}


def _points_at(event: ChangeEvent) -> dict[str, str]:
    """The ids of the objects ``event``'s frame shows, by kind (see ``_WRITTEN``)."""
    ids = {"proposal": event.proposal_id} if event.proposal_id else {}
    if event.entity_type in ("task", "draft"):
        ids[event.entity_type] = event.entity_id
    return ids


def as_unstamped(rows: Sequence[Mapping[str, Any]]) -> list[ChangeEvent]:
    """A writer's change events, from the rows it inserts at commit, as records."""
    return as_records(ChangeEvent, rows)


async def written_objects(
    session: AsyncSession, events: Sequence[ChangeEvent], *, only_written: bool = False
) -> list[dict[str, Any]]:
    """Per event, records of the proposal, task or draft it points at, read in the writer's
    transaction after a flush: the state its commit leaves, so its frame reads nothing.
    ``only_written`` keeps only the events' own entities, which the transaction holds until
    it commits; a row it only points at could change first (docs/design.md section 8.4)."""
    await session.flush()
    pointed = [_points_at(event) for event in events]
    if only_written:
        entities = {_entity(event) for event in events}
        pointed = [
            {kind: object_id for kind, object_id in ids.items() if (kind, object_id) in entities}
            for ids in pointed
        ]
    wanted: dict[str, set[str]] = defaultdict(set)
    for ids in pointed:
        for kind, object_id in ids.items():
            wanted[kind].add(object_id)
    found: dict[str, dict[str, Any]] = {}
    for kind, object_ids in wanted.items():
        rows = await rows_where(session, _WRITTEN[kind], "id", sorted(object_ids))
        found[kind] = {row.id: row for row in rows}  # type: ignore[attr-defined]
    return [
        {
            kind: found[kind][object_id]
            for kind, object_id in ids.items()
            if object_id in found[kind]
        }
        for ids in pointed
    ]


async def mark_published(session: AsyncSession, ids: Sequence[str]) -> None:
    if ids:
        await session.exec(
            update(ChangeEvent)
            .where(among(col(ChangeEvent.id), ids, sa.String(), _dialect(session)))
            .values(published_at=clock.now())
        )


async def unpublished(
    session: AsyncSession, older_than: datetime, limit: int = FEED_PAGE_SIZE
) -> list[ChangeEvent]:
    """Stamped events whose publish never succeeded (a crash, Redis down)."""
    stmt = (
        select(ChangeEvent)
        .where(
            col(ChangeEvent.published_at).is_(None),
            col(ChangeEvent.cursor).is_not(None),
            col(ChangeEvent.occurred_at) < older_than,
        )
        .order_by(col(ChangeEvent.cursor))
        .limit(limit)
    )
    return list((await session.exec(stmt)).all())


async def events_after(
    session: AsyncSession,
    after: int,
    *,
    through: int | None = None,
    where: Sequence[Any] = (),
    limit: int = FEED_PAGE_SIZE,
) -> list[ChangeEvent]:
    """Stamped events with ``after < cursor <= through``, in cursor order."""
    stmt = select(ChangeEvent).where(col(ChangeEvent.cursor) > after, *where)
    if through is not None:
        stmt = stmt.where(col(ChangeEvent.cursor) <= through)
    stmt = stmt.order_by(col(ChangeEvent.cursor)).limit(limit)
    return list((await session.exec(stmt)).all())


async def prune(session: AsyncSession, before: datetime) -> int:
    """Delete the feed up to the newest event older than ``before``; return how many went.

    Deleting by cursor (not by time) keeps "everything through ``pruned_through`` is
    gone" exact, so a resume below it is refused with ``CURSOR_EXPIRED``.
    """
    state = await feed_state(session, lock=True)
    through = (
        await session.exec(
            select(func.max(ChangeEvent.cursor)).where(col(ChangeEvent.occurred_at) < before)
        )
    ).first()
    if through is None or through <= state.pruned_through:
        return 0
    result: Any = await session.exec(delete(ChangeEvent).where(col(ChangeEvent.cursor) <= through))
    state.pruned_through = through
    await session.flush()
    return int(result.rowcount or 0)
