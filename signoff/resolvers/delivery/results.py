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

from sqlmodel import col

from signoff.constants import DELIVERY_BACKOFF_MAX_SECONDS
from signoff.delivery import Jitter, backoff_seconds
from signoff.errors import (
    ResultIdentityMismatch,
    ResultNotExpected,
    ResultTerminal,
    ValidationFailed,
)
from signoff.models import Proposal, ProposalState, Role, Target
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.outcomes import fail_terminally, mark_applied, schedule_retry
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
    work: UnitOfWork,
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
    session = work.session
    proposal = await require_row(session, Proposal, proposal_id, "No such proposal.")
    if proposal.operation_key != operation_key or proposal.payload_digest != payload_digest:
        raise ResultIdentityMismatch("operationKey and payloadDigest must be the proposal's own.")
    replayed = _replay(proposal, result)
    if replayed is not None:
        return replayed
    moved = await _apply(work, viewer, proposal, result, jitter)
    if moved is None:
        # Another report or a worker settled it first: answer as of what it is now.
        current = await PROPOSAL.reread(work, proposal_id)
        replayed = _replay(current, result)
        if replayed is None:
            raise ResultTerminal("The proposal changed while this result was recorded; retry.")
        return replayed
    record(
        work,
        Happening(
            entity_type="proposal",
            entity_id=proposal.id,
            actor_id=viewer.id,
            action="proposal.result_reported",
            details={
                "status": result.status.value,
                "terminal": result.terminal,
                "error_code": result.error_code,
                "provider_request_id": result.provider_request_id,
            },
        ),
    )
    await work.commit()
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
    if proposal.agent_executes:
        raise ResultNotExpected(
            "Its agent executes this proposal and reports with reportExecution; Signoff "
            "never delivered it.",
            state=state,
        )
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
    work: UnitOfWork,
    viewer: Viewer,
    proposal: Proposal,
    result: ActionResult,
    jitter: Jitter | None,
) -> Proposal | None:
    # Any delivery still open (the lifecycle's edges name the states) may be settled.
    open_ = col(Proposal.delivery_terminal).is_(False)
    details: dict[str, Any] = {
        "reported_by": viewer.id,
        "provider_request_id": result.provider_request_id,
    }
    if result.status is ResultStatus.APPLIED:
        return await mark_applied(work, proposal.id, open_, viewer.id, **details)
    code = result.error_code or "REPORTED_FAILURE"
    target = await work.session.get(Target, proposal.target_id)
    assert target is not None
    if result.terminal or proposal.delivery_attempt_count >= target.max_attempts:
        return await fail_terminally(work, proposal.id, open_, code, actor_id=viewer.id, **details)
    delay = (
        result.retry_after_seconds
        if result.retry_after_seconds is not None
        else backoff_seconds(proposal.delivery_attempt_count, jitter)
    )
    at = work.now() + timedelta(seconds=delay)
    return await schedule_retry(work, proposal.id, open_, code, at, actor_id=viewer.id)
