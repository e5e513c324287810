"""A proposal's decision receipt: what was approved, by whom, what became of it, and the
proof that each of its audit records is in the signed log (docs/design.md section 15).
One JSON document that ``signoff audit verify-receipt`` checks offline."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import AuditProofUnavailable
from signoff.events import auditlog
from signoff.evidence.verify import RECEIPT_FORMAT
from signoff.models import Approval, AuditEvent, DeliveryAttempt
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.proposals import get_proposal
from signoff.resolvers.core.audit import audit_tree


async def decision_receipt(
    *, session: AsyncSession, viewer: Viewer, proposal_id: str, checkpoint_size: int | None = None
) -> dict[str, Any]:
    """The receipt, proven against the checkpoint of ``checkpoint_size`` records (default:
    the latest); records after it are listed under ``notYetCheckpointed``."""
    proposal = await get_proposal(session=session, viewer=viewer, proposal_id=proposal_id)
    approvals = (
        await session.exec(
            select(Approval)
            .where(Approval.proposal_id == proposal.id)
            .order_by(col(Approval.created_at), col(Approval.id))
        )
    ).all()
    attempts = (
        await session.exec(
            select(DeliveryAttempt)
            .where(DeliveryAttempt.proposal_id == proposal.id)
            .order_by(col(DeliveryAttempt.attempt_number))
        )
    ).all()
    ids = (
        await session.exec(
            select(AuditEvent.id).where(
                AuditEvent.target_type == "proposal", AuditEvent.target_id == proposal.id
            )
        )
    ).all()
    found = await auditlog.records_of(session, list(ids))
    if checkpoint_size is None:
        checkpoint = await auditlog.latest_checkpoint(session)
    else:
        chosen = await auditlog.checkpoints(session, since=checkpoint_size, through=checkpoint_size)
        if not chosen:
            raise AuditProofUnavailable(f"No checkpoint covers exactly {checkpoint_size} records.")
        checkpoint = chosen[0]
    size = 0 if checkpoint is None else checkpoint.size
    tree = await audit_tree(session, size)
    covered = [r for r in found if r["entry"]["position"] < size]
    return {
        "format": RECEIPT_FORMAT,
        "proposal": {
            "id": proposal.id,
            "actionCode": proposal.action_code,
            "targetId": proposal.target_id,
            "digest": proposal.payload_digest,
            "revision": proposal.revision,
            "state": str(proposal.state),
        },
        "approvals": [
            {
                "actorId": approval.approver_id,
                "decision": str(approval.decision),
                "digest": approval.payload_digest,
                "revision": approval.revision,
                "at": auditlog.timestamp(approval.created_at),
            }
            for approval in approvals
        ],
        "delivery": {
            "state": str(proposal.state),
            "attempts": len(attempts),
            "lastOutcome": None if not attempts else _outcome(attempts[-1]),
            "appliedAt": None
            if proposal.applied_at is None
            else auditlog.timestamp(proposal.applied_at),
        },
        "records": [
            {
                **record,
                "inclusionProof": [
                    h.hex() for h in tree.inclusion_proof(record["entry"]["position"], size)
                ],
            }
            for record in covered
        ],
        "notYetCheckpointed": [r["entry"]["id"] for r in found if r["entry"]["position"] >= size],
        "checkpoint": None if checkpoint is None else auditlog.as_document(checkpoint),
    }


def _outcome(attempt: DeliveryAttempt) -> dict[str, Any]:
    return {
        "attempt": attempt.attempt_number,
        "responseClass": str(attempt.response_class),
        "statusCode": attempt.status_code,
        "errorCode": attempt.error_code,
        "responseDigest": attempt.response_digest,
    }
