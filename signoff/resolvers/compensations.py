"""Compensation (operators): propose the action that undoes an applied one.

The compensating proposal always waits for human approval, whatever its target's
mode, and the original becomes ``COMPENSATION_REQUIRED`` in the same transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import commit, rollback
from signoff.errors import CompensationUnavailable, NotFound, PayloadSchemaInvalid
from signoff.jsonvalues import validate_against
from signoff.models import ChangeKind, HumanTask, Proposal, ProposalState, Role, Target
from signoff.resolvers import audit, idempotency
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.changes import record_proposal_change, record_task_change
from signoff.resolvers.delivery import transition
from signoff.resolvers.proposals import ProposeResult, checked_request, new_proposal
from signoff.resolvers.retries import load_proposal
from signoff.validation import require_text

COMPENSABLE = (ProposalState.APPLIED, ProposalState.COMPENSATION_REQUIRED)


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
    key_request = {"proposal_id": proposal_id, "digest": request.digest()}
    stored = await _replay(session, viewer, idempotency_key, key_request)
    if stored is not None:
        return stored
    original = await load_proposal(session, proposal_id)
    target = await _compensation_target(session, original, target_id)
    validate_against(request.payload, target.input_schema, PayloadSchemaInvalid, "payload")
    proposal, task = new_proposal(
        viewer, target, request, human=True, compensates_proposal_id=original.id
    )
    assert task is not None  # compensations are always approved by a person
    session.add_all([proposal, task])
    await _require_compensation(session, viewer, original.id, proposal)
    record_task_change(
        session, ChangeKind.TASK_CREATED, task, viewer.id, proposed_by_id=proposal.proposed_by_id
    )
    result = {"proposal_id": proposal.id}
    idempotency.remember(
        session, viewer, "proposeCompensation", idempotency_key, key_request, result
    )
    try:
        await session.flush()
    except IntegrityError:
        await rollback(session)
        stored = await _replay(session, viewer, idempotency_key, key_request)
        if stored is None:
            raise
        return stored
    await commit(session)
    return ProposeResult(proposal=proposal, task=task, replayed=False)


async def _compensation_target(session: AsyncSession, original: Proposal, target_id: str) -> Target:
    if original.state not in COMPENSABLE:
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


async def _require_compensation(
    session: AsyncSession, viewer: Viewer, original_id: str, compensation: Proposal
) -> None:
    """Mark the original ``COMPENSATION_REQUIRED`` (if it still is applied) and audit both."""
    marked = await transition(
        session,
        original_id,
        col(Proposal.state).in_([state.value for state in COMPENSABLE]),
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
        target_id=compensation.id,
        state=compensation.state,
        compensates=original_id,
        payload_digest=compensation.payload_digest,
        operation_key=compensation.operation_key,
    )
    audit.record(
        session,
        actor_id=viewer.id,
        action="proposal.compensation_required",
        target_type="proposal",
        target_id=original_id,
        compensation_id=compensation.id,
    )
    record_proposal_change(session, ChangeKind.PROPOSAL_PROPOSED, compensation, viewer.id)
    record_proposal_change(session, ChangeKind.PROPOSAL_COMPENSATION_REQUIRED, marked, viewer.id)


async def _replay(
    session: AsyncSession, viewer: Viewer, key: str, request: dict[str, Any]
) -> ProposeResult | None:
    stored = await idempotency.find_replay(session, viewer, "proposeCompensation", key, request)
    if stored is None:
        return None
    proposal = await load_proposal(session, stored["proposal_id"])
    task = (
        await session.exec(select(HumanTask).where(HumanTask.proposal_id == proposal.id))
    ).first()
    return ProposeResult(proposal=proposal, task=task, replayed=True)
