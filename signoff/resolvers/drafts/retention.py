"""Draft retention: what is kept of a draft once it has expired, and for how long.

A draft that reached the executor loses its values but keeps everything that stops a
duplicate; one that never did is deleted. Old idempotency records of draft requests go
too, a bounded batch a run (docs/design.md section 13, Retention).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, delete, select, update

from signoff.constants import (
    DRAFT_REQUEST_OPERATION_PREFIX,
    DRAFT_REQUEST_REPLAY_SECONDS,
    DRAFT_RETAIN_SECONDS,
    DRAFT_RETENTION_BATCH,
)
from signoff.models import Draft, DraftOwner, IdempotencyRecord
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import DRAFT
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.drafts.drafts import REPORTED


@dataclass(frozen=True)
class DraftRetention:
    """What one run did."""

    values_dropped: int
    drafts_deleted: int
    requests_deleted: int

    @property
    def total(self) -> int:
        return self.values_dropped + self.drafts_deleted + self.requests_deleted


def reached_executor() -> Any:
    """A draft whose operation may have been sent (the dispatch check passed, or the executor
    reported an outcome): its tombstones are kept forever."""
    return sa.or_(
        col(Draft.dispatched_at).is_not(None),
        col(Draft.status).in_([status.value for status in REPORTED]),
    )


def retention_due(now: datetime) -> Any:
    """Drafts that expired more than ``DRAFT_RETAIN_SECONDS`` ago."""
    return col(Draft.expires_at) <= now - timedelta(seconds=DRAFT_RETAIN_SECONDS)


async def retain_drafts(make: WorkMaker, *, limit: int = DRAFT_RETENTION_BATCH) -> DraftRetention:
    """One bounded run of draft retention: drop values, delete drafts, forget requests."""
    async with make() as work:
        dropped = await drop_values(work, limit=limit)
    async with make() as work:
        deleted = await delete_unsent(work, limit=limit)
    async with make() as work:
        forgotten = await forget_requests(work, limit=limit)
    return DraftRetention(len(dropped), len(deleted), forgotten)


async def drop_values(work: UnitOfWork, *, limit: int = DRAFT_RETENTION_BATCH) -> list[str]:
    """Drop the values of drafts past retention that reached the executor; returns their ids."""
    now = work.now()
    still_due = sa.and_(
        retention_due(now), reached_executor(), col(Draft.values_dropped_at).is_(None)
    )
    stmt = (
        select(Draft.id)
        .where(still_due)
        .order_by(col(Draft.expires_at), col(Draft.id))
        .limit(limit)
    )
    ids = list((await work.session.exec(stmt)).all())
    dropped = await DRAFT.move_all(
        work,
        lifecycles.DROP_DRAFT_VALUES,
        ids,
        actor_id=None,
        guard=still_due,
        values={
            "values": sa.null(),  # SQL NULL, not the JSON null a Python None would store
            "updated_by_user": [],
            "values_dropped_at": now,
            "revision": Draft.revision + 1,
        },
    )
    await work.commit()
    return [draft.id for draft in dropped]


async def delete_unsent(work: UnitOfWork, *, limit: int = DRAFT_RETENTION_BATCH) -> list[str]:
    """Delete drafts past retention that never reached the executor, and the owner rows
    that point only at them; returns the deleted ids."""
    now = work.now()
    still_due = sa.and_(retention_due(now), sa.not_(reached_executor()))
    stmt = (
        select(Draft.id)
        .where(still_due)
        .order_by(col(Draft.expires_at), col(Draft.id))
        .limit(limit)
    )
    candidates = list((await work.session.exec(stmt)).all())
    if not candidates:
        await work.rollback()
        return []
    session = work.session
    pointing = col(DraftOwner.draft_id).in_(candidates)
    # The owners first, as every draft mutation locks them (no deadlock with one of them).
    await session.exec(select(DraftOwner.owner_key).where(pointing).with_for_update())
    deleted_stmt = (
        delete(Draft).where(col(Draft.id).in_(candidates), still_due).returning(col(Draft.id))
    )
    deleted = list((await session.exec(deleted_stmt)).scalars().all())
    if deleted:
        gone = col(DraftOwner.draft_id).in_(deleted)
        marked = col(DraftOwner.manual_submitted_at).is_not(None)
        await session.exec(delete(DraftOwner).where(gone, sa.not_(marked)))
        await session.exec(
            update(DraftOwner).where(gone, marked).values(draft_id=None, updated_at=now)
        )
    for draft_id in deleted:
        record(
            work,
            Happening(
                entity_type=DRAFT.entity_type,
                entity_id=draft_id,
                actor_id=None,
                action="draft.deleted",
                details={"reason": "retention"},
            ),
        )
    await work.commit()
    return deleted


async def forget_requests(work: UnitOfWork, *, limit: int = DRAFT_RETENTION_BATCH) -> int:
    """Delete idempotency records of draft requests older than the replay window."""
    cutoff = work.now() - timedelta(seconds=DRAFT_REQUEST_REPLAY_SECONDS)
    stmt = (
        select(IdempotencyRecord.id)
        .where(
            col(IdempotencyRecord.operation).startswith(
                DRAFT_REQUEST_OPERATION_PREFIX, autoescape=True
            ),
            col(IdempotencyRecord.created_at) < cutoff,
        )
        .limit(limit)
    )
    ids = list((await work.session.exec(stmt)).all())
    if ids:
        await work.session.exec(delete(IdempotencyRecord).where(col(IdempotencyRecord.id).in_(ids)))
    await work.commit()
    return len(ids)
