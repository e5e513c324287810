"""Deadline policies: what a proposal nobody approved in time becomes (docs/design.md 4.20).

A target's policy says ``EXPIRE`` (cancel), ``REJECT`` (with a reason) or ``ESCALATE``
(hand the proposal and its task to the next queue of a chain, with a new deadline; past
the chain's end it expires). A proposer may override it per proposal within the target's
bounds. Nothing here ever approves. Each step is a transition (rows P7, P11, P12 with T9
or T11), so it is audited, published and visible on the proposal, and it races a decision
through the same compare-and-set: exactly one of them wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from signoff.constants import (
    ESCALATION_CHAIN_MAX,
    PROPOSAL_EXPIRY_MAX_SECONDS,
    PROPOSAL_EXPIRY_MIN_SECONDS,
    REASON_MAX_CHARS,
    REASON_MIN_CHARS,
    SWEEP_BATCH_SIZE,
)
from signoff.errors import DeadlinePolicyOutOfBounds, ValidationFailed
from signoff.models import (
    ChangeKind,
    DeadlineAction,
    HumanTask,
    Proposal,
    ProposalState,
    Queue,
    Target,
)
from signoff.models.proposal import format_expiry, payload_digest_of
from signoff.resolvers.core import lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL, TASK
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.notifications import notify
from signoff.resolvers.reach.reminders import reminder_at
from signoff.validation import optional_text, require_range


@dataclass(frozen=True)
class DeadlinePolicy:
    """A checked policy, as a target holds it and a proposal copies it."""

    action: DeadlineAction = DeadlineAction.EXPIRE
    reason: str | None = None
    escalation_chain: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        """The policy as a target's registration audits it."""
        return {
            "action": self.action.value,
            "reason": self.reason,
            "escalation": self.escalation_chain,
        }


async def checked_policy(
    work: UnitOfWork,
    *,
    action: DeadlineAction | None,
    reason: str | None,
    escalation: Sequence[tuple[str, int]] | None,
    first_queue_id: str | None,
) -> DeadlinePolicy:
    """A target's policy with every field checked; ``escalation`` is ``(queueId,
    deadlineSeconds)`` steps, each to a queue that exists and differs from the one before."""
    action = action or DeadlineAction.EXPIRE
    reason = optional_text(reason, "deadlinePolicy.reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    steps = list(escalation or [])
    if action is DeadlineAction.REJECT and reason is None:
        raise ValidationFailed(
            "A REJECT policy needs the reason it rejects with.", field="deadlinePolicy.reason"
        )
    if (action is DeadlineAction.ESCALATE) != bool(steps):
        raise ValidationFailed(
            "An ESCALATE policy needs escalation steps, and only it may have them.",
            field="deadlinePolicy.escalation",
        )
    if len(steps) > ESCALATION_CHAIN_MAX:
        raise ValidationFailed(
            f"An escalation chain has at most {ESCALATION_CHAIN_MAX} steps.",
            field="deadlinePolicy.escalation",
        )
    chain: list[dict[str, Any]] = []
    previous = first_queue_id
    for queue_id, seconds in steps:
        await require_row(
            work.session,
            Queue,
            queue_id,
            "No such queue.",
            field="deadlinePolicy.escalation.queueId",
        )
        if queue_id == previous:
            raise ValidationFailed(
                "Each escalation step goes to a queue other than the one before it.",
                field="deadlinePolicy.escalation.queueId",
            )
        seconds = require_range(
            seconds,
            "deadlinePolicy.escalation.deadlineSeconds",
            PROPOSAL_EXPIRY_MIN_SECONDS,
            PROPOSAL_EXPIRY_MAX_SECONDS,
            PROPOSAL_EXPIRY_MIN_SECONDS,
        )
        chain.append({"queueId": queue_id, "deadlineSeconds": seconds})
        previous = queue_id
    return DeadlinePolicy(action, reason, chain)


def policy_of(target: Target) -> DeadlinePolicy:
    return DeadlinePolicy(
        DeadlineAction(target.deadline_action),
        target.deadline_reason,
        list(target.escalation_chain),
    )


@dataclass(frozen=True)
class DeadlineOverride:
    """A proposer's choice of policy for one proposal, bounded by its target's."""

    action: DeadlineAction
    reason: str | None = None
    escalation_steps: int | None = None  # escalate this far along the target's chain

    def describe(self) -> dict[str, Any]:
        """What enters the request digest."""
        return {
            "action": self.action.value,
            "reason": self.reason,
            "escalation_steps": self.escalation_steps,
        }

    def within(self, target: Target) -> DeadlinePolicy:
        """The policy this override makes of ``target``'s: any of the actions, but
        escalation only along the target's own chain and no further than it goes."""
        reason = optional_text(
            self.reason, "deadlinePolicy.reason", REASON_MIN_CHARS, REASON_MAX_CHARS
        )
        chain = list(target.escalation_chain)
        if self.action is DeadlineAction.REJECT:
            reason = reason or target.deadline_reason
            if reason is None:
                raise ValidationFailed(
                    "A REJECT policy needs the reason it rejects with.",
                    field="deadlinePolicy.reason",
                )
            return DeadlinePolicy(self.action, reason)
        if self.action is DeadlineAction.EXPIRE:
            return DeadlinePolicy(self.action)
        steps = len(chain) if self.escalation_steps is None else self.escalation_steps
        if not chain or not 1 <= steps <= len(chain):
            raise DeadlinePolicyOutOfBounds(
                f"This target's policy allows at most {len(chain)} escalation steps.",
                limit=len(chain),
            )
        return DeadlinePolicy(self.action, None, chain[:steps])


async def lapsed_proposals(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[Proposal]:
    """Proposals still awaiting approval past their deadline, the longest lapsed first."""
    stmt = (
        select(Proposal)
        .where(
            col(Proposal.state) == ProposalState.APPROVAL_REQUIRED.value,
            col(Proposal.expires_at) <= work.now(),
        )
        .order_by(col(Proposal.expires_at))
        .limit(limit)
    )
    return list((await work.session.exec(stmt)).all())


async def apply_deadlines(work: UnitOfWork, *, limit: int = SWEEP_BATCH_SIZE) -> list[str]:
    """Apply the deadline policy of every proposal past its deadline; returns their ids."""
    handled = [
        proposal.id
        for proposal in await lapsed_proposals(work, limit=limit)
        if await apply_deadline(work, proposal) is not None
    ]
    await work.commit()
    return handled


async def apply_deadline(work: UnitOfWork, proposal: Proposal) -> DeadlineAction | None:
    """Apply ``proposal``'s policy in ``work``'s transaction (the caller commits) if it is
    still past its deadline at the escalation level it was read at; returns what was done,
    ``None`` when a decision or another sweep got there first."""
    action = DeadlineAction(proposal.deadline_action)
    if action is DeadlineAction.ESCALATE:
        if proposal.escalation_level < len(proposal.escalation_chain):
            return action if await escalate(work, proposal) else None
        action = DeadlineAction.EXPIRE  # past the chain's end
    if action is DeadlineAction.REJECT:
        return action if await reject(work, proposal) else None
    return action if await expire(work, [proposal.id]) else None


def _still_lapsed(proposal: Proposal, now: datetime) -> Any:
    """The guard of every deadline step: past the deadline, not escalated since read."""
    return sa.and_(
        col(Proposal.expires_at) <= now,
        col(Proposal.escalation_level) == proposal.escalation_level,
    )


async def escalate(work: UnitOfWork, proposal: Proposal) -> Proposal | None:
    """Rows P12 and T11: the proposal and its task move to the chain's next queue with a new
    deadline. The deadline is part of the digest, so the digest changes with it: a decision
    on the old one is refused. Approvals already counted stay counted."""
    now = work.now()
    step = proposal.escalation_chain[proposal.escalation_level]
    from_queue = proposal.queue_id
    expires_at = (now + timedelta(seconds=int(step["deadlineSeconds"]))).replace(microsecond=0)
    digest = payload_digest_of(proposal, expires_at=expires_at)
    escalated = await PROPOSAL.move(
        work,
        lifecycles.ESCALATE,
        proposal.id,
        actor_id=None,
        guard=_still_lapsed(proposal, now),
        values={
            "queue_id": step["queueId"],
            "expires_at": expires_at,
            "payload_digest": digest,
            "escalation_level": proposal.escalation_level + 1,
        },
        details={
            "from_queue_id": from_queue,
            "to_queue_id": step["queueId"],
            "level": proposal.escalation_level + 1,
            "expires_at": format_expiry(expires_at),
            "payload_digest": digest,
        },
    )
    if escalated is None:
        return None
    await _seen_leaving(work, escalated, from_queue)
    task = await _approval_task(work, proposal.id)
    if task is not None:
        queue = await work.session.get(Queue, step["queueId"])
        assert queue is not None  # queues are never deleted
        moved = await TASK.move(
            work,
            lifecycles.ESCALATE_TASK,
            task.id,
            actor_id=None,
            values={
                "queue_id": step["queueId"],
                "assignee_id": None,
                "claim_expires_at": None,
                "due_at": expires_at,
                # Reminders start again in the new queue, for the new deadline.
                "due_from": now,
                "reminders_sent": 0,
                "next_reminder_at": reminder_at(queue.reminder_percents, now, expires_at, 0),
                "context": {
                    **task.context,
                    "payloadDigest": digest,
                    "expiresAt": format_expiry(expires_at),
                    "escalationLevel": escalated.escalation_level,
                },
            },
            details={"from_queue_id": from_queue, "to_queue_id": step["queueId"]},
        )
        if moved is not None:
            await _seen_leaving(work, moved, from_queue)
            await notify(work, moved, "task.escalated")
    return escalated


async def _seen_leaving(work: UnitOfWork, row: Proposal | HumanTask, queue_id: str | None) -> None:
    """The queue an escalation leaves sees it go: the change event the move published to
    the new queue, about the same version, is recorded for the old queue too (no second
    audit record). Its frames there carry no proposal or task, which its reviewers may no
    longer see (``Visibility.sees_object_in``)."""
    if queue_id is None:
        return
    if isinstance(row, Proposal):
        subject = await lifecycles.describe_proposal(work, row)
        entity_type, kind = "proposal", ChangeKind.PROPOSAL_ESCALATED
    else:
        subject = await lifecycles.describe_task(work, row)
        entity_type, kind = "task", ChangeKind.TASK_ESCALATED
    record(
        work,
        Happening(
            entity_type=entity_type,
            entity_id=row.id,
            actor_id=None,
            kind=kind,
            version=row.version,
            queue_id=queue_id,
            proposal_id=subject.proposal_id,
            snapshot=subject.snapshot,
        ),
    )


async def reject(work: UnitOfWork, proposal: Proposal) -> Proposal | None:
    """Rows P11 and T9: the proposal is rejected with its policy's reason, its task expires."""
    now = work.now()
    rejected = await PROPOSAL.move(
        work,
        lifecycles.REJECT_AT_DEADLINE,
        proposal.id,
        actor_id=None,
        guard=_still_lapsed(proposal, now),
        values={"decided_at": now},
        details={"reason": proposal.deadline_reason},
    )
    if rejected is None:
        return None
    task = await _approval_task(work, proposal.id)
    if task is not None:
        await TASK.move(
            work,
            lifecycles.EXPIRE_TASK,
            task.id,
            actor_id=None,
            values={"assignee_id": None, "claim_expires_at": None},
        )
    return rejected


async def _approval_task(work: UnitOfWork, proposal_id: str) -> HumanTask | None:
    stmt = select(HumanTask).where(HumanTask.proposal_id == proposal_id)
    return (await work.session.exec(stmt)).first()


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
