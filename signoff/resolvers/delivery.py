"""Delivery rules: claiming a due proposal with a lease, and recording what an attempt came to.

Every change is a transition of the proposal's delivery (``lifecycles.PROPOSAL``), a
compare-and-set: a claim succeeds for one worker only, and an outcome is recorded only
by the worker that still holds the lease it claimed (``state = 'APPLYING'`` and the
lease generation it was given), so a worker whose lease lapsed cannot overwrite the
work of the one that took over, in this retry cycle or any later one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, or_
from sqlmodel import col, select

from signoff.constants import DELIVERY_ACCEPTED_WAIT_SECONDS
from signoff.delivery import Jitter, Outcome, backoff_seconds
from signoff.models import (
    Approval,
    Decision,
    DeliveryAttempt,
    Proposal,
    ProposalState,
    ResponseClass,
    Target,
)
from signoff.models.proposal import payload_digest_of
from signoff.resolvers import lifecycles
from signoff.resolvers.incidents import record_delivery_dead_letter
from signoff.resolvers.lifecycles import PROPOSAL
from signoff.resolvers.target_health import judge_target_health
from signoff.resolvers.work import UnitOfWork

PENDING = tuple(state.value for state in lifecycles.PENDING)


def due(now: datetime) -> Any:
    """Proposals a worker may claim now: pending and due, or in flight with a lapsed lease;
    either way, of a target that is not paused."""
    return and_(
        or_(
            and_(
                col(Proposal.state).in_(PENDING),
                col(Proposal.delivery_terminal).is_(False),
                col(Proposal.next_attempt_at) <= now,
            ),
            and_(
                col(Proposal.state) == ProposalState.APPLYING.value,
                col(Proposal.lease_expires_at) <= now,
            ),
        ),
        target_not_paused(),
    )


def target_not_paused() -> Any:
    """The proposal's target is not paused. A paused target's proposals wait: not claimed,
    not taken over after a lapsed lease, not enqueued by the sweep (an attempt already in
    flight when the pause commits still records its outcome)."""
    return ~exists().where(
        col(Target.id) == col(Proposal.target_id), col(Target.paused_at).is_not(None)
    )


def holding(lease: int) -> Any:
    """The caller still holds the delivery lease of generation ``lease``."""
    return and_(
        col(Proposal.state) == ProposalState.APPLYING.value,
        col(Proposal.delivery_lease) == lease,
    )


async def claim_delivery(
    work: UnitOfWork, proposal_id: str, *, lease_seconds: int
) -> Proposal | None:
    """Take a lease on a due proposal and count the attempt; ``None`` if it is not due."""
    now = work.now()
    claimed = await PROPOSAL.move(
        work,
        lifecycles.START_ATTEMPT,
        proposal_id,
        actor_id=None,
        guard=due(now),
        values={
            "lease_expires_at": now + timedelta(seconds=lease_seconds),
            "delivery_attempt_count": col(Proposal.delivery_attempt_count) + 1,
            "delivery_lease": col(Proposal.delivery_lease) + 1,
        },
    )
    await work.commit()
    return claimed


async def renew_lease(
    work: UnitOfWork, proposal_id: str, lease: int, *, lease_seconds: int
) -> bool:
    """Extend the lease while the request is still in flight."""
    renewed = await PROPOSAL.move(
        work,
        lifecycles.RENEW_LEASE,
        proposal_id,
        actor_id=None,
        guard=holding(lease),
        values={"lease_expires_at": work.now() + timedelta(seconds=lease_seconds)},
    )
    await work.commit()
    return renewed is not None


async def refusal_before_send(work: UnitOfWork, proposal: Proposal, target: Target) -> str | None:
    """Why this attempt must not be sent, or ``None``: re-checked at every attempt, because
    what reaches the target must be exactly what was approved, while it is still valid."""
    if proposal.delivery_attempt_count > target.max_attempts:
        return "ATTEMPTS_EXHAUSTED"
    if proposal.expires_at <= work.now():
        return "ACTION_EXPIRED"
    if payload_digest_of(proposal) != proposal.payload_digest:
        return "APPROVAL_DIGEST_MISMATCH"
    approved = await work.session.exec(
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


async def refuse_attempt(work: UnitOfWork, proposal: Proposal, error_code: str) -> None:
    """End delivery without sending: the attempt failed a check before it was sent."""
    await fail_terminally(
        work, proposal.id, holding(proposal.delivery_lease), error_code, edge=lifecycles.REFUSE
    )
    await work.commit()


async def record_outcome(
    work: UnitOfWork,
    proposal: Proposal,
    target: Target,
    outcome: Outcome,
    *,
    jitter: Jitter | None = None,
) -> ProposalState | None:
    """Store the attempt and move the proposal by its response class; returns the new state,
    or ``None`` when this worker no longer held the lease (the attempt is still stored)."""
    work.session.add(
        DeliveryAttempt(
            proposal_id=proposal.id,
            attempt_number=proposal.delivery_attempt_count,
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
    settled = await _settle(work, proposal, target, outcome, jitter)
    await judge_target_health(work, target, outcome)
    await work.commit()
    return None if settled is None else ProposalState(settled.state)


async def _settle(
    work: UnitOfWork,
    proposal: Proposal,
    target: Target,
    outcome: Outcome,
    jitter: Jitter | None,
) -> Proposal | None:
    """docs/design.md section 4.6, rows D4-D7: applied, accepted (202), retrying, or failed."""
    now, held, attempt = (
        work.now(),
        holding(proposal.delivery_lease),
        proposal.delivery_attempt_count,
    )
    if outcome.response_class is ResponseClass.APPLIED:
        return await mark_applied(work, proposal.id, held)
    if outcome.response_class is ResponseClass.ACCEPTED:
        wait = timedelta(seconds=DELIVERY_ACCEPTED_WAIT_SECONDS)
        return await PROPOSAL.move(
            work,
            lifecycles.ACCEPT,
            proposal.id,
            actor_id=None,
            guard=held,
            values={"accepted_at": now, "lease_expires_at": now + wait, "last_error_code": None},
        )
    code = outcome.error_code or "ATTEMPTS_EXHAUSTED"
    if outcome.response_class is ResponseClass.RETRYABLE and attempt < target.max_attempts:
        delay = outcome.retry_after_seconds
        if delay is None:
            delay = backoff_seconds(attempt, jitter)
        return await schedule_retry(work, proposal.id, held, code, now + timedelta(seconds=delay))
    return await fail_terminally(work, proposal.id, held, code, status_code=outcome.status_code)


async def mark_applied(
    work: UnitOfWork, proposal_id: str, guard: Any, actor_id: str | None = None, **details: Any
) -> Proposal | None:
    applied = await PROPOSAL.move(
        work,
        lifecycles.APPLY,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values={
            "applied_at": work.now(),
            "lease_expires_at": None,
            "next_attempt_at": None,
            "last_error_code": None,
        },
        details=details,
    )
    return applied


async def schedule_retry(
    work: UnitOfWork,
    proposal_id: str,
    guard: Any,
    error_code: str,
    at: datetime,
    actor_id: str | None = None,
) -> Proposal | None:
    """Back to pending with ``next_attempt_at``; the next attempt is enqueued after commit."""
    return await PROPOSAL.move(
        work,
        lifecycles.RETRY_LATER,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values={"next_attempt_at": at, "lease_expires_at": None, "last_error_code": error_code},
    )


async def fail_terminally(
    work: UnitOfWork,
    proposal_id: str,
    guard: Any,
    error_code: str,
    *,
    edge: lifecycles.ProposalEdge = lifecycles.FAIL,
    actor_id: str | None = None,
    **details: Any,
) -> Proposal | None:
    """Terminal failure: no more attempts, a dead letter and an incident."""
    failed = await PROPOSAL.move(
        work,
        edge,
        proposal_id,
        actor_id=actor_id,
        guard=guard,
        values={
            "delivery_terminal": True,
            "next_attempt_at": None,
            "lease_expires_at": None,
            "last_error_code": error_code,
        },
        details={"error_code": error_code, **details},
    )
    if failed is not None:
        await record_delivery_dead_letter(work, failed, error_code, **details)
    return failed
