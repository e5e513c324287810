"""The change feed in the database: stamping cursors in commit order, reading, pruning.

Why cursors are safe against commit order
-----------------------------------------
A writer inserts its ``ChangeEvent`` with ``cursor`` NULL, in its own transaction.
Cursors are handed out later by ``stamp_pending``, which

1. locks the single ``change_feed_state`` row (``SELECT … FOR UPDATE`` on
   PostgreSQL; on SQLite every write transaction is already exclusive), so stamping
   runs one at a time across every process;
2. only then reads the unstamped rows. A statement sees exactly the transactions
   committed before it started, so this reads committed events only, never one
   whose transaction is still open;
3. numbers them ``last_cursor + 1 …`` and commits the stamps with the new
   ``last_cursor``.

A transaction that commits later is stamped by a later run, which starts after this
run committed and therefore numbers above everything this run stamped. Events are
published only after their stamps commit. So no event can ever appear below a cursor
that a subscriber has already been given, however writers' commits cross. Cursors are
also dense (no holes), which lets each process detect a lost or late message and fill
the gap from this table.

An insert-time sequence would not do: on PostgreSQL a transaction that took number
10 can commit after number 11 is already visible and delivered.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import FEED_PAGE_SIZE
from signoff.models import ChangeEvent, ChangeFeedState

STATE_ID = 1


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
        .values(id=STATE_ID, last_cursor=0, pruned_through=0)
        .on_conflict_do_nothing(index_elements=["id"])
    )
    return (await session.exec(stmt.execution_options(populate_existing=True))).one()


def _dialect(session: AsyncSession) -> str:
    bind: Any = session.get_bind()
    return str(bind.dialect.name)


async def has_pending(session: AsyncSession) -> bool:
    """Whether any committed event waits for its cursor (cheap, takes no lock)."""
    stmt = select(ChangeEvent.id).where(col(ChangeEvent.cursor).is_(None)).limit(1)
    return (await session.exec(stmt)).first() is not None


async def stamp_pending(session: AsyncSession, limit: int = FEED_PAGE_SIZE) -> list[ChangeEvent]:
    """Give committed, unstamped events the next cursors; the caller commits, then publishes."""
    state = await feed_state(session, lock=True)
    pending = list(
        (
            await session.exec(
                select(ChangeEvent)
                .where(col(ChangeEvent.cursor).is_(None))
                .order_by(col(ChangeEvent.occurred_at), col(ChangeEvent.id))
                .limit(limit)
            )
        ).all()
    )
    for offset, event in enumerate(pending, start=1):
        event.cursor = state.last_cursor + offset
    state.last_cursor += len(pending)
    await session.flush()
    return pending


async def mark_published(session: AsyncSession, ids: Sequence[str]) -> None:
    if ids:
        await session.exec(
            update(ChangeEvent).where(col(ChangeEvent.id).in_(ids)).values(published_at=clock.now())
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
