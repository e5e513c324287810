"""Delivery rules: claiming a due proposal with a lease, and recording what an attempt came to.

Every change is a compare-and-set ``UPDATE … WHERE <expected state> RETURNING``: a claim
succeeds for one worker only, and an outcome is recorded only by the worker that still
holds the attempt (``state = 'APPLYING'`` and the attempt number it claimed), so a
worker whose lease lapsed cannot overwrite the work of the one that took over.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import DELIVERY_ACCEPTED_WAIT_SECONDS
from signoff.database import commit
from signoff.delivery import Jitter, Outcome, backoff_seconds
from signoff.jobs.queue import enqueue_delivery_after_commit
from signoff.models import (
    Approval,
    ChangeKind,
    Decision,
    DeliveryAttempt,
    Proposal,
    ProposalState,
    ResponseClass,
    Target,
)
from signoff.models.proposal import payload_digest_of
from signoff.resolvers import audit
from signoff.resolvers.changes import record_proposal_change
from signoff.resolvers.incidents import record_delivery_dead_letter

PENDING = (ProposalState.QUEUED.value, ProposalState.FAILED.value)


def due(now: datetime) -> Any:
    """Proposals a worker may claim now: pending and due, or in flight with a lapsed lease."""
    return or_(
        and_(
            col(Proposal.state).in_(PENDING),
            col(Proposal.delivery_terminal).is_(False),
            col(Proposal.next_attempt_at) <= now,
        ),
        and_(
            col(Proposal.state) == ProposalState.APPLYING.value,
            col(Proposal.lease_expires_at) <= now,
        ),
    )


def holding(attempt: int) -> Any:
    """The caller still holds delivery attempt ``attempt``."""
    return and_(
        col(Proposal.state) == ProposalState.APPLYING.value,
        col(Proposal.delivery_attempt_count) == attempt,
    )


async def transition(
    session: AsyncSession, proposal_id: str, condition: Any, **values: Any
) -> Proposal | None:
    """Compare-and-set on one proposal; the caller that matches gets the updated row."""
    stmt = (
        update(Proposal)
        .where(col(Proposal.id) == proposal_id, condition)
        .values(updated_at=clock.now(), **values)
        .returning(Proposal)
        .execution_options(populate_existing=True)
    )
    return (await session.exec(stmt)).scalars().first()


async def claim_delivery(
    session: AsyncSession, proposal_id: str, *, lease_seconds: int
) -> Proposal | None:
    """Take a lease on a due proposal and count the attempt; ``None`` if it is not due."""
    now = clock.now()
    claimed = await transition(
        session,
        proposal_id,
        due(now),
        state=ProposalState.APPLYING.value,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        delivery_attempt_count=col(Proposal.delivery_attempt_count) + 1,
    )
    await commit(session)
    return claimed


async def renew_lease(
    session: AsyncSession, proposal_id: str, attempt: int, *, lease_seconds: int
) -> bool:
    """Extend the lease while the request is still in flight."""
    renewed = await transition(
        session,
        proposal_id,
        holding(attempt),
        lease_expires_at=clock.now() + timedelta(seconds=lease_seconds),
    )
    await commit(session)
    return renewed is not None


async def refusal_before_send(
    session: AsyncSession, proposal: Proposal, target: Target
) -> str | None:
    """Why this attempt must not be sent, or ``None``: re-checked at every attempt, because
    what reaches the target must be exactly what was approved, while it is still valid."""
    if proposal.delivery_attempt_count > target.max_attempts:
        return "ATTEMPTS_EXHAUSTED"
    if proposal.expires_at <= clock.now():
        return "ACTION_EXPIRED"
    if payload_digest_of(proposal) != proposal.payload_digest:
        return "APPROVAL_DIGEST_MISMATCH"
    approved = await session.exec(
        select(Approval.payload_digest).where(
            Approval.proposal_id == proposal.id, Approval.decision == Decision.APPROVED
        )
    )
    digests = list(approved.all())
    if (
        any(d != proposal.payload_digest for d in digests)
        or len(digests) < proposal.required_approvals
    ):
        return "APPROVAL_DIGEST_MISMATCH"
    return None


async def refuse_attempt(session: AsyncSession, proposal: Proposal, error_code: str) -> None:
    """End delivery without sending: the attempt failed a check in ``refusal_before_send``."""
    ended = await fail_terminally(
        session, proposal.id, holding(proposal.delivery_attempt_count), error_code
    )
    if ended is not None:
        audit.record(
            session,
            actor_id=None,
            action="proposal.delivery_refused",
            target_type="proposal",
            target_id=proposal.id,
            error_code=error_code,
        )
    await commit(session)


async def record_outcome(
    session: AsyncSession,
    proposal: Proposal,
    target: Target,
    outcome: Outcome,
    *,
    jitter: Jitter | None = None,
) -> ProposalState | None:
    """Store the attempt and move the proposal by its response class; returns the new state,
    or ``None`` when this worker no longer held the attempt (the attempt is still stored)."""
    attempt = proposal.delivery_attempt_count
    session.add(
        DeliveryAttempt(
            proposal_id=proposal.id,
            attempt_number=attempt,
            response_class=outcome.response_class,
            status_code=outcome.status_code,
            error_code=outcome.error_code,
            request_digest=outcome.request_digest,
            response_digest=outcome.response_digest,
            duration_ms=outcome.duration_ms,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
        )
    )
    settled = await _settle(session, proposal.id, attempt, target, outcome, jitter)
    await commit(session)
    return None if settled is None else ProposalState(settled.state)


async def _settle(
    session: AsyncSession,
    proposal_id: str,
    attempt: int,
    target: Target,
    outcome: Outcome,
    jitter: Jitter | None,
) -> Proposal | None:
    """docs/design.md section 4.6, rows D4-D7: applied, accepted (202), retrying, or failed."""
    now, held = clock.now(), holding(attempt)
    if outcome.response_class is ResponseClass.APPLIED:
        return await mark_applied(session, proposal_id, held, now)
    if outcome.response_class is ResponseClass.ACCEPTED:
        wait = timedelta(seconds=DELIVERY_ACCEPTED_WAIT_SECONDS)
        accepted = await transition(
            session,
            proposal_id,
            held,
            accepted_at=now,
            lease_expires_at=now + wait,
            last_error_code=None,
        )
        if accepted is not None:
            record_proposal_change(session, ChangeKind.PROPOSAL_ACCEPTED, accepted, None)
        return accepted
    code = outcome.error_code or "ATTEMPTS_EXHAUSTED"
    if outcome.response_class is ResponseClass.RETRYABLE and attempt < target.max_attempts:
        delay = outcome.retry_after_seconds
        if delay is None:
            delay = backoff_seconds(attempt, jitter)
        return await schedule_retry(
            session, proposal_id, held, code, now + timedelta(seconds=delay)
        )
    return await fail_terminally(session, proposal_id, held, code, status_code=outcome.status_code)


async def mark_applied(
    session: AsyncSession, proposal_id: str, condition: Any, now: datetime, **details: Any
) -> Proposal | None:
    applied = await transition(
        session,
        proposal_id,
        condition,
        state=ProposalState.APPLIED.value,
        applied_at=now,
        lease_expires_at=None,
        next_attempt_at=None,
        last_error_code=None,
    )
    if applied is not None:
        audit.record(
            session,
            actor_id=None,
            action="proposal.applied",
            target_type="proposal",
            target_id=proposal_id,
            attempts=applied.delivery_attempt_count,
            **details,
        )
        record_proposal_change(session, ChangeKind.PROPOSAL_APPLIED, applied, None)
    return applied


async def schedule_retry(
    session: AsyncSession, proposal_id: str, condition: Any, error_code: str, at: datetime
) -> Proposal | None:
    """Back to pending with ``next_attempt_at``; the next attempt is enqueued after commit."""
    failed = await transition(
        session,
        proposal_id,
        condition,
        state=ProposalState.FAILED.value,
        next_attempt_at=at,
        lease_expires_at=None,
        last_error_code=error_code,
    )
    if failed is not None:
        enqueue_delivery_after_commit(session, proposal_id, failed.delivery_attempt_count + 1, at)
        record_proposal_change(session, ChangeKind.PROPOSAL_FAILED, failed, None)
    return failed


async def fail_terminally(
    session: AsyncSession, proposal_id: str, condition: Any, error_code: str, **details: Any
) -> Proposal | None:
    """Terminal failure: no more attempts, a dead letter and an incident."""
    failed = await transition(
        session,
        proposal_id,
        condition,
        state=ProposalState.FAILED.value,
        delivery_terminal=True,
        next_attempt_at=None,
        lease_expires_at=None,
        last_error_code=error_code,
    )
    if failed is not None:
        await record_delivery_dead_letter(session, failed, error_code, **details)
        audit.record(
            session,
            actor_id=None,
            action="proposal.delivery_failed",
            target_type="proposal",
            target_id=proposal_id,
            error_code=error_code,
            attempts=failed.delivery_attempt_count,
        )
        record_proposal_change(session, ChangeKind.PROPOSAL_FAILED, failed, None)
    return failed
