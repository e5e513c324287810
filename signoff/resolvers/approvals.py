"""Deciding a proposal: the one rule behind ``decideProposal`` and completing an approval task.

Four eyes and quorum: ``required_approvals`` distinct reviewers, never the
proposer, must approve; one rejection rejects; each reviewer decides once. The
proposal changes state exactly once, whatever the concurrency, because:

* the approval row is unique per (proposal, reviewer), so a reviewer's second
  decision fails in the database even when both arrive at once;
* the proposal's counter and state move in one conditional ``UPDATE … WHERE
  state = 'APPROVAL_REQUIRED' RETURNING``; PostgreSQL serialises updates of one
  row and re-checks the condition, so late callers match nothing and roll back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import REASON_MAX_CHARS, REASON_MIN_CHARS
from signoff.database import commit, rollback
from signoff.errors import (
    AlreadyDecided,
    NotAwaitingApproval,
    PayloadDigestMismatch,
    SelfApprovalForbidden,
    TaskClaimedByOther,
)
from signoff.jobs.queue import enqueue_delivery_after_commit
from signoff.models import (
    Approval,
    ChangeKind,
    Decision,
    HumanTask,
    Proposal,
    ProposalState,
    TaskState,
)
from signoff.models.task import claim_lapsed
from signoff.resolvers import audit, idempotency
from signoff.resolvers.access import Viewer, require_reviewer_of
from signoff.resolvers.changes import record_proposal_change, record_task_change
from signoff.resolvers.proposals import get_proposal
from signoff.validation import optional_text


@dataclass(frozen=True)
class DecideResult:
    proposal: Proposal
    approval: Approval
    task: HumanTask | None
    replayed: bool


async def decide_proposal(
    *,
    session: AsyncSession,
    viewer: Viewer,
    proposal_id: str,
    decision: Decision,
    payload_digest: str,
    reason: str | None = None,
    idempotency_key: str | None = None,
) -> DecideResult:
    """Record one reviewer's decision; the last approval of a quorum queues the proposal."""
    request = {
        "proposal_id": proposal_id,
        "decision": decision.value,
        "payload_digest": payload_digest,
        "reason": reason,
    }
    stored = await idempotency.find_replay(
        session, viewer, "decideProposal", idempotency_key, request
    )
    if stored is not None:
        return await _load_result(session, stored, replayed=True)
    proposal = await get_proposal(session=session, viewer=viewer, proposal_id=proposal_id)
    if proposal.payload_digest != payload_digest:
        raise PayloadDigestMismatch(
            "payloadDigest does not match the proposal; reload it and review what changed.",
            expected=proposal.payload_digest,
        )
    result = await apply_decision(session, viewer, proposal, decision, reason)
    idempotency.remember(
        session,
        viewer,
        "decideProposal",
        idempotency_key,
        request,
        {"approval_id": result.approval.id},
    )
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        stored = await idempotency.find_replay(
            session, viewer, "decideProposal", idempotency_key, request
        )
        if stored is None:
            raise
        return await _load_result(session, stored, replayed=True)
    await commit(session)
    return result


async def apply_decision(
    session: AsyncSession,
    viewer: Viewer,
    proposal: Proposal,
    decision: Decision,
    reason: str | None,
) -> DecideResult:
    """Check and record a decision in the session's transaction; the caller commits."""
    require_reviewer_of(viewer, proposal.queue_id)
    now = clock.now()
    _require_awaiting(proposal, now)
    if proposal.proposed_by_id == viewer.id:
        raise SelfApprovalForbidden("You proposed this action; another reviewer must decide it.")
    reason = optional_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    task = await _approval_task(session, proposal.id)
    if task is not None and _held_by_other(task, viewer, now):
        raise TaskClaimedByOther("Another reviewer has claimed this approval task.")
    if await _decision_of(session, proposal.id, viewer.id) is not None:
        raise AlreadyDecided("You have already decided this proposal.")

    approval = Approval(
        proposal_id=proposal.id,
        approver_id=viewer.id,
        decision=decision,
        payload_digest=proposal.payload_digest,
        reason=reason,
        created_at=now,
    )
    session.add(approval)
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        raise AlreadyDecided("You have already decided this proposal.") from None

    updated = await _advance(session, proposal.id, decision, now)
    if updated is None:
        await rollback(session)
        raise NotAwaitingApproval("The proposal was decided by someone else just now.")
    decided = updated.state != ProposalState.APPROVAL_REQUIRED
    if updated.state == ProposalState.QUEUED:
        enqueue_delivery_after_commit(session, updated.id, 1)
    if task is not None:
        _settle_task(task, viewer, decision, reason, decided, now)
        await session.flush()  # the task's event carries the version this update gives it
    _audit(session, viewer, updated, approval, decided)
    _record_changes(session, viewer, updated, task, decided)
    return DecideResult(proposal=updated, approval=approval, task=task, replayed=False)


def _require_awaiting(proposal: Proposal, now: Any) -> None:
    if proposal.state != ProposalState.APPROVAL_REQUIRED:
        raise NotAwaitingApproval(
            f"The proposal is {proposal.state}, not waiting for approval.", state=proposal.state
        )
    if proposal.expires_at <= now:
        raise NotAwaitingApproval("The proposal's approval deadline has passed.", state="EXPIRED")


def _held_by_other(task: HumanTask, viewer: Viewer, now: Any) -> bool:
    return (
        task.state == TaskState.CLAIMED
        and task.assignee_id != viewer.id
        and not claim_lapsed(task, now)
    )


async def _approval_task(session: AsyncSession, proposal_id: str) -> HumanTask | None:
    stmt = select(HumanTask).where(HumanTask.proposal_id == proposal_id)
    return (await session.exec(stmt)).first()


async def _decision_of(session: AsyncSession, proposal_id: str, actor_id: str) -> Approval | None:
    stmt = select(Approval).where(
        Approval.proposal_id == proposal_id, Approval.approver_id == actor_id
    )
    return (await session.exec(stmt)).first()


async def _advance(
    session: AsyncSession, proposal_id: str, decision: Decision, now: Any
) -> Proposal | None:
    """Count the decision and move the state, only if the proposal is still awaiting it."""
    count = col(Proposal.approval_count)
    if decision is Decision.APPROVED:
        reached = count + 1 >= col(Proposal.required_approvals)
        values: dict[str, Any] = {
            "approval_count": count + 1,
            # The delivery outbox takes it from QUEUED; APPROVED is never left standing.
            "state": case((reached, ProposalState.QUEUED.value), else_=col(Proposal.state)),
            "decided_at": case((reached, now), else_=None),
            "next_attempt_at": case((reached, now), else_=None),
        }
    else:
        values = {"state": ProposalState.REJECTED.value, "decided_at": now}
    stmt = (
        update(Proposal)
        .where(
            col(Proposal.id) == proposal_id,
            col(Proposal.state) == ProposalState.APPROVAL_REQUIRED.value,
            col(Proposal.expires_at) > now,
        )
        .values(updated_at=now, **values)
        .returning(Proposal)
        .execution_options(populate_existing=True)
    )
    return (await session.exec(stmt)).scalars().first()


def _settle_task(
    task: HumanTask, viewer: Viewer, decision: Decision, reason: str | None, decided: bool, now: Any
) -> None:
    """A final decision completes the task; a partial quorum reopens it for the next reviewer."""
    task.assignee_id = None
    task.claim_expires_at = None
    task.updated_at = now
    if decided:
        task.state = TaskState.COMPLETED
        task.response = {"decision": decision.value, **({"reason": reason} if reason else {})}
        task.completed_by_id = viewer.id
        task.completed_at = now
    else:
        task.state = TaskState.OPEN


def _audit(
    session: AsyncSession, viewer: Viewer, proposal: Proposal, approval: Approval, decided: bool
) -> None:
    audit.record(
        session,
        actor_id=viewer.id,
        action=f"approval.{approval.decision.lower()}",
        target_type="proposal",
        target_id=proposal.id,
        approval_id=approval.id,
        payload_digest=approval.payload_digest,
        reason=approval.reason,
        approvals=proposal.approval_count,
        required=proposal.required_approvals,
    )
    if decided:
        action = (
            "proposal.rejected" if proposal.state == ProposalState.REJECTED else "proposal.approved"
        )
        audit.record(
            session,
            actor_id=viewer.id,
            action=action,
            target_type="proposal",
            target_id=proposal.id,
            state=proposal.state,
        )


def _record_changes(
    session: AsyncSession, viewer: Viewer, proposal: Proposal, task: HumanTask | None, decided: bool
) -> None:
    if not decided:
        kind = ChangeKind.PROPOSAL_APPROVAL_ADDED
    elif proposal.state == ProposalState.REJECTED:
        kind = ChangeKind.PROPOSAL_REJECTED
    else:
        kind = ChangeKind.PROPOSAL_APPROVED
    record_proposal_change(session, kind, proposal, viewer.id)
    if task is not None:
        record_task_change(
            session,
            ChangeKind.TASK_COMPLETED if decided else ChangeKind.TASK_REOPENED,
            task,
            viewer.id,
            proposed_by_id=proposal.proposed_by_id,
        )


async def _load_result(
    session: AsyncSession, stored: dict[str, Any], *, replayed: bool
) -> DecideResult:
    approval = await session.get(Approval, stored["approval_id"])
    assert approval is not None  # approvals are never deleted
    proposal = await session.get(Proposal, approval.proposal_id)
    assert proposal is not None
    task = await _approval_task(session, proposal.id)
    return DecideResult(proposal=proposal, approval=approval, task=task, replayed=replayed)
