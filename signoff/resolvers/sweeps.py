"""Periodic repairs that keep due work moving whatever happened to Redis or to a worker.

* ``enqueue_due_deliveries``: every proposal whose ``next_attempt_at`` has come or
  whose lease has lapsed is enqueued again (a lost message delays, never loses, work);
* ``expire_proposals``: a proposal whose approval deadline passed before approval is
  ``CANCELLED`` and its approval task ``EXPIRED``, audited.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import SWEEP_BATCH_SIZE
from signoff.models import HumanTask, Proposal, ProposalState, Target
from signoff.resolvers import lifecycles
from signoff.resolvers.circuit import accepting
from signoff.resolvers.delivery_due import due
from signoff.resolvers.lifecycles import PROPOSAL, TASK
from signoff.resolvers.work import JobQueue, UnitOfWork


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


async def expire_proposals(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[str]:
    """Cancel proposals whose approval deadline has passed, and expire their tasks."""
    cancelled = await expire(work, await lapsed_approvals(work, limit=limit))
    await work.commit()
    return [proposal.id for proposal, _ in cancelled]


async def lapsed_approvals(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[str]:
    """Proposals still awaiting approval past their deadline."""
    lapsed = (
        select(Proposal.id)
        .where(
            col(Proposal.state) == ProposalState.APPROVAL_REQUIRED.value,
            col(Proposal.expires_at) <= work.now(),
        )
        .limit(limit)
    )
    return list((await work.session.exec(lapsed)).all())


async def expire(
    work: UnitOfWork, proposal_ids: Sequence[str]
) -> list[tuple[Proposal, list[HumanTask]]]:
    """Rows P7 and T9: cancel those of ``proposal_ids`` still past their deadline and expire
    their approval tasks, in ``work``'s transaction (the caller commits)."""
    now = work.now()
    cancelled = await PROPOSAL.move_all(
        work,
        lifecycles.EXPIRE,
        proposal_ids,
        actor_id=None,
        guard=col(Proposal.expires_at) <= now,
        values={"decided_at": now},
    )
    if not cancelled:
        return []
    ids = [proposal.id for proposal in cancelled]
    tasks = select(HumanTask.id).where(col(HumanTask.proposal_id).in_(ids))
    expired = await TASK.move_all(
        work,
        lifecycles.EXPIRE_TASK,
        list((await work.session.exec(tasks)).all()),
        actor_id=None,
        values={"assignee_id": None, "claim_expires_at": None},
    )
    return [
        (proposal, [task for task in expired if task.proposal_id == proposal.id])
        for proposal in cancelled
    ]
