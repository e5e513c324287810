"""Retrying a delivery that failed terminally (operators): back to ``QUEUED``, attempts reset."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.database import commit, rollback
from signoff.errors import NotFound, NotRetryable, RetryDigestMismatch
from signoff.jobs.queue import enqueue_delivery_after_commit
from signoff.models import ChangeKind, Proposal, ProposalState, Role
from signoff.resolvers import audit, idempotency
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.changes import record_proposal_change
from signoff.resolvers.delivery import transition


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
    """Queue a terminally failed proposal again with its attempts reset; idempotent by key."""
    require_role(viewer, Role.OPERATOR)
    request = {"proposal_id": proposal_id, "payload_digest": payload_digest}
    stored = await idempotency.find_replay(
        session, viewer, "retryProposal", idempotency_key, request
    )
    if stored is not None:
        return RetryResult(proposal=await load_proposal(session, proposal_id), replayed=True)
    proposal = await load_proposal(session, proposal_id)
    if proposal.payload_digest != payload_digest:
        raise RetryDigestMismatch(
            "payloadDigest does not match the proposal.", expected=proposal.payload_digest
        )
    retried = await _requeue(session, viewer, proposal)
    idempotency.remember(
        session, viewer, "retryProposal", idempotency_key, request, {"proposal_id": proposal_id}
    )
    enqueue_delivery_after_commit(session, proposal_id, 1)
    try:
        await session.flush()
    except IntegrityError:
        # The same key, at the same time: the other request retried it.
        await rollback(session)
        return RetryResult(proposal=await load_proposal(session, proposal_id), replayed=True)
    await commit(session)
    return RetryResult(proposal=retried, replayed=False)


async def _requeue(session: AsyncSession, viewer: Viewer, proposal: Proposal) -> Proposal:
    """Compare-and-set from terminal failure to ``QUEUED``: one of concurrent retries wins."""
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
    record_proposal_change(session, ChangeKind.PROPOSAL_REQUEUED, retried, viewer.id)
    return retried


async def load_proposal(session: AsyncSession, proposal_id: str) -> Proposal:
    """The proposal as the database has it now (operators see every proposal)."""
    proposal = await session.get(Proposal, proposal_id, populate_existing=True)
    if proposal is None:
        raise NotFound("No such proposal.")
    return proposal
