"""Asynchronous results: an integration reports how an accepted (202) action ended.

The report must name the proposal's operation key and payload digest. A replay of
the outcome already recorded answers ``replayed``; a report that contradicts a
finished delivery is ``RESULT_TERMINAL``. Concurrent reports are compare-and-set on
the proposal's state, so exactly one of them moves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import and_
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import DELIVERY_BACKOFF_MAX_SECONDS
from signoff.database import commit, rollback
from signoff.delivery import Jitter, backoff_seconds
from signoff.errors import (
    NotFound,
    ResultIdentityMismatch,
    ResultNotExpected,
    ResultTerminal,
    ValidationFailed,
)
from signoff.models import Proposal, ProposalState, Role, Target
from signoff.resolvers import audit
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.delivery import PENDING, fail_terminally, mark_applied, schedule_retry
from signoff.validation import require_text


class ResultStatus(StrEnum):
    APPLIED = "APPLIED"
    FAILED = "FAILED"


DONE = (ProposalState.APPLIED, ProposalState.COMPENSATION_REQUIRED)
NOT_DELIVERED = (
    ProposalState.APPROVAL_REQUIRED,
    ProposalState.APPROVED,
    ProposalState.REJECTED,
    ProposalState.CANCELLED,
)


@dataclass(frozen=True)
class ReportResult:
    proposal: Proposal
    replayed: bool


@dataclass(frozen=True)
class ActionResult:
    """What the integration reported."""

    status: ResultStatus
    terminal: bool = False
    retry_after_seconds: int | None = None
    error_code: str | None = None
    provider_request_id: str | None = None


async def report_action_result(
    *,
    session: AsyncSession,
    viewer: Viewer,
    proposal_id: str,
    operation_key: str,
    payload_digest: str,
    result: ActionResult,
    jitter: Jitter | None = None,
) -> ReportResult:
    """Record an integration's report of how a delivered action ended."""
    require_role(viewer, Role.INTEGRATION)
    _check(result)
    proposal = await session.get(Proposal, proposal_id)
    if proposal is None:
        raise NotFound("No such proposal.")
    if proposal.operation_key != operation_key or proposal.payload_digest != payload_digest:
        raise ResultIdentityMismatch("operationKey and payloadDigest must be the proposal's own.")
    replayed = _replay(proposal, result)
    if replayed is not None:
        return replayed
    moved = await _apply(session, viewer, proposal, result, jitter)
    if moved is None:
        # Another report or a worker settled it first: answer as of what it is now.
        await rollback(session)
        current = await session.get(Proposal, proposal_id, populate_existing=True)
        assert current is not None
        replayed = _replay(current, result)
        if replayed is None:
            raise ResultTerminal("The proposal changed while this result was recorded; retry.")
        return replayed
    audit.record(
        session,
        actor_id=viewer.id,
        action="proposal.result_reported",
        target_type="proposal",
        target_id=proposal.id,
        status=result.status.value,
        terminal=result.terminal,
        error_code=result.error_code,
        provider_request_id=result.provider_request_id,
    )
    await commit(session)
    return ReportResult(proposal=moved, replayed=False)


def _check(result: ActionResult) -> None:
    if result.error_code is not None:
        require_text(result.error_code, "errorCode", 1, 64)
    if result.provider_request_id is not None:
        require_text(result.provider_request_id, "providerRequestId", 1, 200)
    if (
        result.retry_after_seconds is not None
        and not 0 <= result.retry_after_seconds <= DELIVERY_BACKOFF_MAX_SECONDS
    ):
        raise ValidationFailed(
            f"retryAfterSeconds must be 0 to {DELIVERY_BACKOFF_MAX_SECONDS}.",
            field="retryAfterSeconds",
        )


def _replay(proposal: Proposal, result: ActionResult) -> ReportResult | None:
    """The answer for a proposal whose delivery already ended, or ``None`` if it has not."""
    state = ProposalState(proposal.state)
    if state in NOT_DELIVERED:
        raise ResultNotExpected(
            f"The proposal is {state}; it was never sent for delivery.", state=state
        )
    if state in DONE:
        if result.status is ResultStatus.APPLIED:
            return ReportResult(proposal=proposal, replayed=True)
        raise ResultTerminal(f"The action was already recorded as applied ({state}).", state=state)
    if proposal.delivery_terminal:
        if result.status is ResultStatus.FAILED and result.terminal:
            return ReportResult(proposal=proposal, replayed=True)
        raise ResultTerminal(
            "The delivery already failed terminally; an operator may retry it.", state=state
        )
    return None


async def _apply(
    session: AsyncSession,
    viewer: Viewer,
    proposal: Proposal,
    result: ActionResult,
    jitter: Jitter | None,
) -> Proposal | None:
    open_ = and_(
        col(Proposal.state).in_([*PENDING, ProposalState.APPLYING.value]),
        col(Proposal.delivery_terminal).is_(False),
    )
    now = clock.now()
    details: dict[str, Any] = {
        "reported_by": viewer.id,
        "provider_request_id": result.provider_request_id,
    }
    if result.status is ResultStatus.APPLIED:
        return await mark_applied(session, proposal.id, open_, now, **details)
    code = result.error_code or "REPORTED_FAILURE"
    target = await session.get(Target, proposal.target_id)
    assert target is not None
    if result.terminal or proposal.delivery_attempt_count >= target.max_attempts:
        return await fail_terminally(session, proposal.id, open_, code, **details)
    delay = (
        result.retry_after_seconds
        if result.retry_after_seconds is not None
        else backoff_seconds(proposal.delivery_attempt_count, jitter)
    )
    return await schedule_retry(session, proposal.id, open_, code, now + timedelta(seconds=delay))
