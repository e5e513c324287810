"""Periodic repairs that keep due work moving whatever happened to Redis or to a worker.

* ``enqueue_due_deliveries``: every proposal whose ``next_attempt_at`` has come or
  whose lease has lapsed is enqueued again (a lost message delays, never loses, work);
* ``expire_proposals``: a proposal whose approval deadline passed before approval is
  ``CANCELLED`` and its approval task ``EXPIRED``, audited.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import SWEEP_BATCH_SIZE
from signoff.database import commit
from signoff.jobs.queue import JobQueue
from signoff.models import ChangeKind, HumanTask, Proposal, ProposalState, TaskState
from signoff.resolvers import audit
from signoff.resolvers.changes import record_proposal_change, record_task_change
from signoff.resolvers.delivery import due


async def enqueue_due_deliveries(
    session: AsyncSession, jobs: JobQueue, *, limit: int = SWEEP_BATCH_SIZE
) -> int:
    """Enqueue the next attempt of every due proposal, oldest first; returns how many."""
    stmt = (
        select(Proposal.id, Proposal.delivery_attempt_count)
        .where(due(clock.now()))
        .order_by(col(Proposal.next_attempt_at))
        .limit(limit)
    )
    rows = list((await session.exec(stmt)).all())
    await session.rollback()  # release the connection before talking to the queue
    for proposal_id, attempts in rows:
        await jobs.enqueue_delivery(proposal_id, attempts + 1)
    return len(rows)


def _record_expiries(
    session: AsyncSession, proposals: list[Proposal], tasks: list[HumanTask]
) -> None:
    proposers = {proposal.id: proposal.proposed_by_id for proposal in proposals}
    for proposal in proposals:
        record_proposal_change(session, ChangeKind.PROPOSAL_CANCELLED, proposal, None)
    for task in tasks:
        proposer = proposers.get(task.proposal_id or "")
        record_task_change(session, ChangeKind.TASK_EXPIRED, task, None, proposed_by_id=proposer)


async def expire_proposals(session: AsyncSession, *, limit: int = SWEEP_BATCH_SIZE) -> list[str]:
    """Cancel proposals whose approval deadline has passed, and expire their tasks."""
    now = clock.now()
    lapsed = (
        select(Proposal.id)
        .where(
            col(Proposal.state) == ProposalState.APPROVAL_REQUIRED.value,
            col(Proposal.expires_at) <= now,
        )
        .limit(limit)
    )
    candidates = list((await session.exec(lapsed)).all())
    if not candidates:
        return []
    cancelled = await session.exec(
        update(Proposal)
        .where(
            col(Proposal.id).in_(candidates),
            col(Proposal.state) == ProposalState.APPROVAL_REQUIRED.value,
        )
        .values(state=ProposalState.CANCELLED.value, decided_at=now, updated_at=now)
        .returning(Proposal)
        .execution_options(populate_existing=True)
    )
    proposals: list[Proposal] = list(cancelled.scalars().all())
    ids = [proposal.id for proposal in proposals]
    tasks: list[HumanTask] = []
    if ids:
        expired = await session.exec(
            update(HumanTask)
            .where(
                col(HumanTask.proposal_id).in_(ids),
                col(HumanTask.state).in_([TaskState.OPEN.value, TaskState.CLAIMED.value]),
            )
            .values(
                state=TaskState.EXPIRED.value,
                assignee_id=None,
                claim_expires_at=None,
                updated_at=now,
            )
            .returning(HumanTask)
            .execution_options(populate_existing=True)
        )
        tasks = list(expired.scalars().all())
    _record_expiries(session, proposals, tasks)
    for proposal_id in ids:
        audit.record(
            session,
            actor_id=None,
            action="proposal.expired",
            target_type="proposal",
            target_id=proposal_id,
            state=ProposalState.CANCELLED.value,
        )
    await commit(session)
    return ids
