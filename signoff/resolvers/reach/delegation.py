"""Reassignment and delegation (docs/design.md section 5.5).

A reviewer holding a task may hand it to another reviewer of its queue
(``reassignTask``); operators and admins may hand any waiting task. The one it is
handed to holds it at once, with the queue's claim lease. A reviewer away for a period
names a delegate (``setDelegate``): a task offered to them then goes to the delegate,
audited ``task.delegated`` with whom it was offered to. One hop only: a delegate's own
delegate is not followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import DELEGATION_MAX_SECONDS
from signoff.errors import AssigneeNotEligible, TaskNotClaimed, ValidationFailed
from signoff.models import (
    APPROVAL_KIND,
    Actor,
    Approval,
    Delegation,
    HumanTask,
    Proposal,
    Queue,
    Role,
)
from signoff.resolvers.access.eligibility import is_eligible, require_eligible
from signoff.resolvers.access.rules import Viewer, require_reviewer_of, require_role
from signoff.resolvers.approval.tasks import get_task
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import TASK
from signoff.resolvers.core.reach_lifecycles import DELEGATION, REVOKE_DELEGATION
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.validation import optional_text


async def set_delegate(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    delegate_id: str,
    ends_at: datetime,
    starts_at: datetime | None = None,
) -> Delegation:
    """Name who takes the tasks offered to the viewer from ``starts_at`` (default now) to
    ``ends_at``; it replaces the viewer's current delegation."""
    require_role(viewer, Role.REVIEWER)
    now = work.now()
    starts_at = starts_at or now
    if delegate_id == viewer.id:
        raise ValidationFailed("Name someone other than yourself.", field="delegateId")
    await require_row(work.session, Actor, delegate_id, "No such actor.", field="delegateId")
    # Any queue: a delegation covers all of the viewer's; a task handed to a delegate who
    # is not a member of its queue (or no longer may decide) stays with the one offered it.
    delegate = await require_eligible(work.session, delegate_id, None, field="delegateId")
    if not starts_at < ends_at or ends_at <= now:
        raise ValidationFailed("endsAt must be in the future and after startsAt.", field="endsAt")
    if ends_at - max(starts_at, now) > timedelta(seconds=DELEGATION_MAX_SECONDS):
        raise ValidationFailed(
            f"A delegation lasts at most {DELEGATION_MAX_SECONDS // 86400} days.", field="endsAt"
        )
    await _revoke(work, viewer, now)
    delegation = Delegation(
        actor_id=viewer.id, delegate_id=delegate.id, starts_at=starts_at, ends_at=ends_at
    )
    work.session.add(delegation)
    await work.session.flush()
    _audit(
        work,
        viewer,
        "actor.delegate_set",
        delegate_id=delegate.id,
        starts_at=starts_at.isoformat(),
        ends_at=ends_at.isoformat(),
    )
    await work.commit()
    return delegation


async def clear_delegate(*, work: UnitOfWork, viewer: Viewer) -> bool:
    """End the viewer's delegation now; ``False`` if there was none."""
    require_role(viewer, Role.REVIEWER)
    cleared = await _revoke(work, viewer, work.now())
    if cleared:
        _audit(work, viewer, "actor.delegate_cleared")
    await work.commit()
    return cleared


async def _revoke(work: UnitOfWork, viewer: Viewer, now: datetime) -> bool:
    """End the viewer's standing delegation, if any; ``False`` if there was none."""
    revoked = await DELEGATION.move_where(
        work,
        REVOKE_DELEGATION,
        col(Delegation.actor_id) == viewer.id,
        actor_id=viewer.id,
        guard=col(Delegation.ends_at) > now,
    )
    return bool(revoked)


def _audit(work: UnitOfWork, viewer: Viewer, action: str, **details: str) -> None:
    record(
        work,
        Happening(
            entity_type="actor",
            entity_id=viewer.id,
            actor_id=viewer.id,
            action=action,
            details=details,
        ),
    )


async def list_delegations(*, session: AsyncSession, viewer: Viewer) -> list[Delegation]:
    """Operators and admins: the delegations standing now or later (not cleared, not yet
    ended), soonest end first: who is away, and who takes their tasks."""
    require_role(viewer, Role.OPERATOR)
    stmt = (
        select(Delegation)
        .where(col(Delegation.revoked_at).is_(None), col(Delegation.ends_at) > clock.now())
        .order_by(col(Delegation.ends_at), col(Delegation.id))
    )
    return list((await session.exec(stmt)).all())


async def delegate_of(session: AsyncSession, actor_id: str, now: datetime) -> str | None:
    """Who takes what is offered to ``actor_id`` now, if they are away."""
    stmt = (
        select(Delegation.delegate_id)
        .where(
            col(Delegation.actor_id) == actor_id,
            col(Delegation.revoked_at).is_(None),
            col(Delegation.starts_at) <= now,
            col(Delegation.ends_at) > now,
        )
        .order_by(col(Delegation.created_at).desc())
        .limit(1)
    )
    return (await session.exec(stmt)).first()


@dataclass(frozen=True)
class Reassigned:
    task: HumanTask
    offered_to_id: str
    delegated: bool


async def reassign_task(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    task_id: str,
    assignee_id: str,
    reason: str | None = None,
) -> Reassigned:
    """Hand a task to another reviewer of its queue (or to their delegate while they are
    away); they hold it at once."""
    session = work.session
    task = await get_task(session=session, viewer=viewer, task_id=task_id)
    reason = optional_text(reason, "reason", 1, 2000)
    if not viewer.sees_everything:
        require_reviewer_of(viewer, task.queue_id)
    now = work.now()
    delegate_id = await delegate_of(session, assignee_id, now)
    if delegate_id is not None and not await is_eligible(session, delegate_id, task.queue_id):
        delegate_id = None  # skipped: the task stays with the reviewer it was offered to
    holder_id = delegate_id or assignee_id
    await _require_eligible(session, viewer, task, holder_id, assignee_id)
    queue = await session.get(Queue, task.queue_id)
    assert queue is not None  # tasks reference their queue
    # Whole seconds, as in claimTask.
    expires = (now + timedelta(seconds=queue.claim_ttl_seconds)).replace(microsecond=0)
    columns = HumanTask.__table__.c  # type: ignore[attr-defined]
    held = sa.and_(columns.assignee_id == viewer.id, columns.claim_expires_at > now)
    moved = await TASK.move(
        work,
        lifecycles.DELEGATE if delegate_id else lifecycles.REASSIGN,
        task.id,
        actor_id=viewer.id,
        # A reviewer hands on only a live claim of their own; operators any waiting task.
        guard=None if viewer.sees_everything else held,
        values={"assignee_id": holder_id, "claim_expires_at": expires},
        details={
            "from": task.assignee_id,
            "to": holder_id,
            "offered_to": assignee_id,
            "reason": reason,
            "claim_expires_at": expires.isoformat(),
        },
    )
    if moved is None:
        await TASK.refuse(
            work,
            task.id,
            lambda _: TaskNotClaimed(
                "You do not hold a live claim on this task, so cannot hand it on."
            ),
        )
    await work.commit()
    return Reassigned(moved, assignee_id, delegate_id is not None)


async def _require_eligible(
    session: AsyncSession, viewer: Viewer, task: HumanTask, holder_id: str, offered_to: str
) -> None:
    """The new holder must be a reviewer of the task's queue who may decide it."""
    await require_row(session, Actor, holder_id, "No such actor.", field="assigneeId")
    via = "" if holder_id == offered_to else " (the delegate of the reviewer you chose)"
    if holder_id == viewer.id:
        raise AssigneeNotEligible(f"You would hand the task to yourself{via}.")
    holder = await require_eligible(session, holder_id, task.queue_id, via=via)
    if task.kind != APPROVAL_KIND:
        return
    proposal = await session.get(Proposal, task.proposal_id)
    assert proposal is not None  # approval tasks always point at their proposal
    if proposal.proposed_by_id == holder_id:
        raise AssigneeNotEligible(f"{holder.name}{via} proposed this action.")
    decided = await session.exec(
        select(Approval.id).where(
            Approval.proposal_id == proposal.id, Approval.approver_id == holder_id
        )
    )
    if decided.first() is not None:
        raise AssigneeNotEligible(f"{holder.name}{via} has already decided this proposal.")
