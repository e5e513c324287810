"""Operator repairs of deliveries: retrying a terminal failure, proposing a compensation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import (
    PROPOSAL_EXPIRY_DEFAULT_SECONDS,
    PROPOSAL_EXPIRY_MAX_SECONDS,
    PROPOSAL_EXPIRY_MIN_SECONDS,
)
from signoff.database import commit, rollback
from signoff.errors import (
    CompensationUnavailable,
    NotFound,
    NotRetryable,
    PayloadSchemaInvalid,
    RetryDigestMismatch,
)
from signoff.jobs.queue import enqueue_delivery_after_commit
from signoff.jsonvalues import require_object, validate_against
from signoff.models import HumanTask, Proposal, ProposalState, Role, Target
from signoff.resolvers import audit, idempotency
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.delivery import transition
from signoff.resolvers.proposals import ProposalRequest, ProposeResult, new_proposal
from signoff.validation import require_range, require_text


@dataclass(frozen=True)
class RetryResult:
    proposal: Proposal
    replayed: bool


async def retry_proposal(
    *,
    session: AsyncSession,
    viewer: Viewer,
    proposal_id: str,
    payload_digest: str,
    idempotency_key: str | None = None,
) -> RetryResult:
    """Queue a terminally failed proposal again with its attempts reset (operators)."""
    require_role(viewer, Role.OPERATOR)
    request = {"proposal_id": proposal_id, "payload_digest": payload_digest}
    stored = await idempotency.find_replay(
        session, viewer, "retryProposal", idempotency_key, request
    )
    if stored is not None:
        return RetryResult(proposal=await _load(session, stored["proposal_id"]), replayed=True)
    proposal = await _load(session, proposal_id)
    if proposal.payload_digest != payload_digest:
        raise RetryDigestMismatch(
            "payloadDigest does not match the proposal.", expected=proposal.payload_digest
        )
    seen, previous_error = ProposalState(proposal.state), proposal.last_error_code
    terminal = and_(
        col(Proposal.state) == ProposalState.FAILED.value, col(Proposal.delivery_terminal).is_(True)
    )
    retried = await transition(
        session,
        proposal.id,
        terminal,
        state=ProposalState.QUEUED.value,
        delivery_terminal=False,
        delivery_attempt_count=0,
        next_attempt_at=clock.now(),
        lease_expires_at=None,
        last_error_code=None,
        accepted_at=None,
    )
    if retried is None:
        await rollback(session)
        raise NotRetryable(
            f"Only a terminally failed proposal can be retried; it was {seen} "
            "when asked (another retry may have just queued it).",
            state=seen,
        )
    audit.record(
        session,
        actor_id=viewer.id,
        action="proposal.retried",
        target_type="proposal",
        target_id=retried.id,
        previous_error_code=previous_error,
    )
    idempotency.remember(
        session, viewer, "retryProposal", idempotency_key, request, {"proposal_id": proposal.id}
    )
    enqueue_delivery_after_commit(session, proposal.id, 1)
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        return RetryResult(proposal=await _load(session, proposal_id), replayed=True)
    await commit(session)
    return RetryResult(proposal=retried, replayed=False)


async def _load(session: AsyncSession, proposal_id: str) -> Proposal:
    proposal = await session.get(Proposal, proposal_id, populate_existing=True)
    if proposal is None:
        raise NotFound("No such proposal.")
    return proposal


async def propose_compensation(
    *,
    session: AsyncSession,
    viewer: Viewer,
    proposal_id: str,
    target_id: str,
    action_code: str,
    payload: Any,
    idempotency_key: str,
    subject: Any = None,
    preconditions: Any = None,
    expires_in_seconds: int | None = None,
) -> ProposeResult:
    """Propose the action that undoes an applied one; it always needs human approval, and
    the original becomes ``COMPENSATION_REQUIRED`` (operators)."""
    require_role(viewer, Role.OPERATOR)
    idempotency_key = require_text(idempotency_key, "idempotencyKey", 1, 150)
    request = ProposalRequest(
        target_id=target_id,
        action_code=require_text(action_code, "actionCode", 1, 200),
        subject=require_object({} if subject is None else subject, "subject"),
        payload=require_object(payload, "payload"),
        preconditions=require_object(
            {} if preconditions is None else preconditions, "preconditions"
        ),
        operation_key=f"compensation:{proposal_id}:{idempotency_key}",
        expires_in_seconds=require_range(
            expires_in_seconds,
            "expiresInSeconds",
            PROPOSAL_EXPIRY_MIN_SECONDS,
            PROPOSAL_EXPIRY_MAX_SECONDS,
            PROPOSAL_EXPIRY_DEFAULT_SECONDS,
        ),
    )
    key_request = {"proposal_id": proposal_id, "digest": request.digest()}
    stored = await idempotency.find_replay(
        session, viewer, "proposeCompensation", idempotency_key, key_request
    )
    if stored is not None:
        return await _compensation(session, stored["proposal_id"], replayed=True)
    original = await _load(session, proposal_id)
    target = await _compensation_target(session, original, target_id)
    validate_against(request.payload, target.input_schema, PayloadSchemaInvalid, "payload")
    proposal, task = new_proposal(
        viewer, target, request, human=True, compensates_proposal_id=original.id
    )
    session.add(proposal)
    session.add(task)
    marked = await transition(
        session,
        original.id,
        col(Proposal.state).in_(
            [ProposalState.APPLIED.value, ProposalState.COMPENSATION_REQUIRED.value]
        ),
        state=ProposalState.COMPENSATION_REQUIRED.value,
    )
    if marked is None:
        await rollback(session)
        raise CompensationUnavailable("The action is no longer applied.")
    audit.record(
        session,
        actor_id=viewer.id,
        action="proposal.proposed",
        target_type="proposal",
        target_id=proposal.id,
        state=proposal.state,
        compensates=original.id,
        payload_digest=proposal.payload_digest,
        operation_key=request.operation_key,
    )
    audit.record(
        session,
        actor_id=viewer.id,
        action="proposal.compensation_required",
        target_type="proposal",
        target_id=original.id,
        compensation_id=proposal.id,
    )
    idempotency.remember(
        session,
        viewer,
        "proposeCompensation",
        idempotency_key,
        key_request,
        {"proposal_id": proposal.id},
    )
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        stored = await idempotency.find_replay(
            session, viewer, "proposeCompensation", idempotency_key, key_request
        )
        if stored is None:
            raise
        return await _compensation(session, stored["proposal_id"], replayed=True)
    await commit(session)
    return ProposeResult(proposal=proposal, task=task, replayed=False)


async def _compensation_target(session: AsyncSession, original: Proposal, target_id: str) -> Target:
    if original.state not in (ProposalState.APPLIED, ProposalState.COMPENSATION_REQUIRED):
        raise CompensationUnavailable(
            f"Only an applied action can be compensated; this one is {original.state}.",
            state=original.state,
        )
    target = await session.get(Target, target_id)
    if target is None:
        raise NotFound("No such target.", field="targetId")
    if not target.is_active:
        raise CompensationUnavailable(f"Target {target.name!r} is retired.")
    if target.queue_id is None:
        raise CompensationUnavailable(
            f"Target {target.name!r} has no approval queue; compensations are always "
            "approved by a person."
        )
    return target


async def _compensation(
    session: AsyncSession, proposal_id: str, *, replayed: bool
) -> ProposeResult:
    proposal = await _load(session, proposal_id)
    task = (
        await session.exec(select(HumanTask).where(HumanTask.proposal_id == proposal_id))
    ).first()
    return ProposeResult(proposal=proposal, task=task, replayed=replayed)
