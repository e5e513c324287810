"""Compensation (operators): propose the action that undoes an applied one.

The compensating proposal always waits for human approval, whatever its target's
mode, and the original becomes ``COMPENSATION_REQUIRED`` in the same transaction.
"""

from __future__ import annotations

from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import CompensationUnavailable
from signoff.models import Proposal, ProposalState, Role, Target
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.proposals import (
    PROPOSED,
    ProposeResult,
    add_proposal,
    check_payload,
    checked_request,
    new_proposal,
)
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import PROPOSAL
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.retries import load_proposal
from signoff.validation import require_text

COMPENSABLE = (ProposalState.APPLIED, ProposalState.COMPENSATION_REQUIRED)


async def propose_compensation(
    *,
    work: UnitOfWork,
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
    """Propose a compensating action for an applied one; idempotent by key."""
    require_role(viewer, Role.OPERATOR)
    idempotency_key = require_text(idempotency_key, "idempotencyKey", 1, 150)
    request = checked_request(
        target_id=target_id,
        action_code=action_code,
        operation_key=f"compensation:{proposal_id}:{idempotency_key}",
        payload=payload,
        subject=subject,
        preconditions=preconditions,
        expires_in_seconds=expires_in_seconds,
    )
    call = idempotency.Keyed.of(
        "proposeCompensation",
        idempotency_key,
        {"proposal_id": proposal_id, "digest": request.digest()},
    )

    async def compensate() -> ProposeResult:
        original = await load_proposal(work.session, proposal_id)
        target = await _compensation_target(work.session, original, target_id)
        check_payload(request.payload, target)
        proposal, task = new_proposal(
            viewer, target, request, human=True, compensates_proposal_id=original.id
        )
        assert task is not None  # compensations are always approved by a person
        await add_proposal(work, viewer, proposal, task, compensates=original.id)
        await _require_compensation(work, viewer, original.id, proposal)
        return ProposeResult(proposal=proposal, task=task, replayed=False)

    done, _ = await idempotency.once(work, viewer, call, compensate, PROPOSED)
    return done


async def _compensation_target(session: AsyncSession, original: Proposal, target_id: str) -> Target:
    if original.state not in COMPENSABLE:
        raise CompensationUnavailable(
            f"Only an applied action can be compensated; this one is {original.state}.",
            state=original.state,
        )
    target = await require_row(session, Target, target_id, "No such target.", field="targetId")
    if not target.is_active:
        raise CompensationUnavailable(f"Target {target.name!r} is retired.")
    if target.queue_id is None:
        raise CompensationUnavailable(
            f"Target {target.name!r} has no approval queue; compensations are always "
            "approved by a person."
        )
    return target


async def _require_compensation(
    work: UnitOfWork, viewer: Viewer, original_id: str, compensation: Proposal
) -> None:
    """Mark the original ``COMPENSATION_REQUIRED`` (if it still is applied)."""
    marked = await PROPOSAL.move(
        work,
        lifecycles.REQUIRE_COMPENSATION,
        original_id,
        actor_id=viewer.id,
        details={"compensation_id": compensation.id},
    )
    if marked is None:
        await PROPOSAL.refuse(
            work, original_id, lambda _: CompensationUnavailable("The action is no longer applied.")
        )
