"""Periodic repairs that keep due work moving whatever happened to Redis or to a worker.

* ``enqueue_due_deliveries``: every proposal whose ``next_attempt_at`` has come or
  whose lease has lapsed is enqueued again (a lost message delays, never loses, work);
* proposals past their approval deadline are handled by their deadline policy
  (``signoff.resolvers.reach.deadlines``).
"""

from __future__ import annotations

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import SWEEP_BATCH_SIZE
from signoff.models import Proposal, Target
from signoff.resolvers.core.work import JobQueue
from signoff.resolvers.delivery.due import due
from signoff.resolvers.targets.circuit import accepting


async def enqueue_due_deliveries(
    session: AsyncSession, jobs: JobQueue, *, limit: int = SWEEP_BATCH_SIZE
) -> int:
    """Enqueue the next attempt of every due proposal, oldest first; returns how many."""
    now = clock.now()
    # A target whose circuit is open is not sent to until its probe is due: no job for it.
    accepting_targets = select(Target.id).where(accepting(now))
    stmt = (
        select(Proposal.id, Proposal.delivery_attempt_count)
        .where(due(now), col(Proposal.target_id).in_(accepting_targets))
        .order_by(col(Proposal.next_attempt_at))
        .limit(limit)
    )
    rows = list((await session.exec(stmt)).all())
    await session.rollback()  # release the connection before talking to the queue
    for proposal_id, attempts in rows:
        await jobs.enqueue_delivery(proposal_id, attempts + 1)
    return len(rows)
