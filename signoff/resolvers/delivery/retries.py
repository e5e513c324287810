"""Retrying a delivery that failed terminally (operators): back to ``QUEUED``, attempts reset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import NotRetryable, RetryDigestMismatch
from signoff.models import Proposal, ProposalState, Role
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.work import UnitOfWork


@dataclass(frozen=True)
class RetryResult:
    proposal: Proposal
    replayed: bool


async def retry_proposal(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    proposal_id: str,
    payload_digest: str,
    idempotency_key: str | None = None,
) -> RetryResult:
    """Queue a terminally failed proposal again with its attempts reset; idempotent by key."""
    require_role(viewer, Role.OPERATOR)
    call = idempotency.Keyed.of(
        "retryProposal",
        idempotency_key,
        {"proposal_id": proposal_id, "payload_digest": payload_digest},
    )

    async def retry() -> Proposal:
        proposal = await load_proposal(work.session, proposal_id)
        if proposal.payload_digest != payload_digest:
            raise RetryDigestMismatch(
                "payloadDigest does not match the proposal.", expected=proposal.payload_digest
            )
        return await _requeue(work, viewer, proposal)

    kept = idempotency.Kept.row(
        "proposal_id",
        lambda proposal: proposal.id,
        lambda work, row_id: load_proposal(work.session, row_id),
    )
    retried, replayed = await idempotency.once(work, viewer, call, retry, kept)
    return RetryResult(proposal=retried, replayed=replayed)


async def _requeue(work: UnitOfWork, viewer: Viewer, proposal: Proposal) -> Proposal:
    retried = await requeue_terminal(work, proposal, actor_id=viewer.id)
    if retried is None:
        await PROPOSAL.refuse(work, proposal.id, _not_retryable)
    return retried


def _not_retryable(current: Proposal) -> Exception:
    state = ProposalState(current.state)
    if current.agent_executes:
        return NotRetryable(
            "Its agent executed this proposal and reported the outcome; an approval "
            "authorises one execution, so propose the action again.",
            state=state,
        )
    return NotRetryable(
        f"Only a terminally failed proposal can be retried; it is {state} "
        "(another retry may have just queued it).",
        state=state,
    )


async def requeue_terminal(
    work: UnitOfWork, proposal: Proposal, *, actor_id: str | None, **details: Any
) -> Proposal | None:
    """From terminal failure to ``QUEUED``, due now: one of concurrent retries wins (the
    others get ``None``). The attempt count starts again; the lease generation does not,
    so no earlier worker can match."""
    return await PROPOSAL.move(
        work,
        lifecycles.REQUEUE,
        proposal.id,
        actor_id=actor_id,
        # An agent's own execution is never retried: one approval, one execution.
        guard=sa.and_(
            col(Proposal.delivery_terminal).is_(True), col(Proposal.agent_executes).is_(False)
        ),
        values={
            "delivery_terminal": False,
            "delivery_attempt_count": 0,
            "next_attempt_at": work.now(),
            "lease_expires_at": None,
            "last_error_code": None,
            "accepted_at": None,
        },
        details={"previous_error_code": proposal.last_error_code, **details},
    )


async def load_proposal(session: AsyncSession, proposal_id: str) -> Proposal:
    """The proposal as the database has it now (operators see every proposal)."""
    return await require_row(session, Proposal, proposal_id, "No such proposal.", refresh=True)
