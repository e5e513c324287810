"""Making approval links (docs/design.md sections 5.6 and 5.7): the check that a reviewer
may decide a proposal now, and the row that keeps only the token's hash.

Kept apart from ``signoff.resolvers.reach.links`` (reading and deciding through a
link) so that notifications can make links without importing the decision rules, which
themselves write notifications.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import APPROVAL_LINK_TTL_MAX_SECONDS
from signoff.errors import (
    AlreadyDecided,
    NotAwaitingApproval,
    SelfApprovalForbidden,
    SignoffError,
)
from signoff.models import (
    APPROVAL_KIND,
    Actor,
    Approval,
    ApprovalLink,
    HumanTask,
    Notification,
    Proposal,
    ProposalState,
    QueueMembership,
)
from signoff.resolvers.access.eligibility import require_eligible
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import APPROVAL_LINK
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork

LINK_PATH = "/links/{token}"


def hash_link_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedLink:
    link: ApprovalLink
    token: str  # shown once

    @property
    def path(self) -> str:
        return LINK_PATH.format(token=self.token)


async def reviewer_as_now(session: AsyncSession, actor_id: str) -> Viewer:
    """The reviewer with their queue memberships as they stand now."""
    actor = await require_row(session, Actor, actor_id, "No such actor.", field="reviewerId")
    queues = await session.exec(
        select(QueueMembership.queue_id).where(QueueMembership.actor_id == actor_id)
    )
    return Viewer(actor=actor, queue_ids=frozenset(queues.all()))


async def require_may_decide(
    session: AsyncSession, reviewer: Viewer, proposal: Proposal, now: datetime
) -> None:
    """The reviewer may decide the proposal now (``require_eligible``), and has not."""
    await require_eligible(session, reviewer.id, proposal.queue_id, field="reviewerId")
    if proposal.state != ProposalState.APPROVAL_REQUIRED or proposal.expires_at <= now:
        raise NotAwaitingApproval("The proposal is not waiting for approval.")
    if proposal.proposed_by_id == reviewer.id:
        raise SelfApprovalForbidden("The reviewer proposed this action.")
    decided = await session.exec(
        select(Approval.id).where(
            Approval.proposal_id == proposal.id, Approval.approver_id == reviewer.id
        )
    )
    if decided.first() is not None:
        raise AlreadyDecided("The reviewer has already decided this proposal.")


async def mint_link(
    work: UnitOfWork,
    *,
    task: HumanTask,
    proposal: Proposal,
    reviewer_id: str,
    ttl_seconds: int,
    created_by_id: str,
    actor_id: str | None,
    notification_id: str | None = None,
) -> CreatedLink:
    """Insert a link (the caller has checked the reviewer may decide) and audit it; the
    token exists only in the answer, the row keeps its hash."""
    now = work.now()
    token = secrets.token_urlsafe(32)
    link = ApprovalLink(
        token_hash=hash_link_token(token),
        task_id=task.id,
        proposal_id=proposal.id,
        reviewer_id=reviewer_id,
        payload_digest=proposal.payload_digest,
        expires_at=min(now + timedelta(seconds=ttl_seconds), proposal.expires_at),
        created_by_id=created_by_id,
        notification_id=notification_id,
        created_at=now,
    )
    work.session.add(link)
    await work.session.flush()
    details = {
        "task_id": task.id,
        "proposal_id": proposal.id,
        "reviewer_id": reviewer_id,
        "payload_digest": link.payload_digest,
        "expires_at": link.expires_at.isoformat(),
    }
    if notification_id is not None:
        details["notification_id"] = notification_id
    record(
        work,
        Happening(
            entity_type="approval_link",
            entity_id=link.id,
            actor_id=actor_id,
            action="approval_link.created",
            details=details,
        ),
    )
    return CreatedLink(link, token)


async def link_for_notification(
    work: UnitOfWork,
    *,
    notification_id: str,
    channel_id: str,
    task_id: str,
    reviewer_id: str,
    ttl_seconds: int,
    created_by_id: str,
) -> CreatedLink | None:
    """A fresh link for one sending of a notification, made by the system. Every link the
    channel sent before for the same task (an earlier attempt of this notification, or an
    earlier notification) is revoked first, so retries and reminders leave at most one
    usable link per channel and task. ``None`` (and no link) when the task is not an
    approval task or the reviewer may not decide it now (removed from the queue, its
    proposer, already decided, not awaiting approval)."""
    sent_before = select(Notification.id).where(
        Notification.channel_id == channel_id, Notification.task_id == task_id
    )
    await APPROVAL_LINK.move_where(
        work,
        lifecycles.REVOKE_LINK,
        col(ApprovalLink.notification_id).in_(sent_before),
        actor_id=None,
        details={"reason": "replaced", "notification_id": notification_id},
    )
    session = work.session
    task = await session.get(HumanTask, task_id)
    if task is None or task.kind != APPROVAL_KIND or task.proposal_id is None:
        return None
    proposal = await session.get(Proposal, task.proposal_id, populate_existing=True)
    assert proposal is not None  # approval tasks always point at their proposal
    try:
        reviewer = await reviewer_as_now(session, reviewer_id)
        await require_may_decide(session, reviewer, proposal, work.now())
    except SignoffError:
        return None
    return await mint_link(
        work,
        task=task,
        proposal=proposal,
        reviewer_id=reviewer.id,
        ttl_seconds=min(ttl_seconds, APPROVAL_LINK_TTL_MAX_SECONDS),
        created_by_id=created_by_id,
        actor_id=None,
        notification_id=notification_id,
    )
