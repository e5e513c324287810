"""Inputs and payloads of amending a proposal and accepting an amendment."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from signoff.schema.approval.proposal import Proposal, ProposalRevision


@strawberry.input
class AmendProposalInput:
    proposal_id: strawberry.ID
    based_on_digest: str = strawberry.field(
        description="The payloadDigest you amend; PAYLOAD_DIGEST_MISMATCH if it has changed."
    )
    reason: str = strawberry.field(description="Why (3-2000 characters).")
    payload: JSON | None = strawberry.field(
        default=None, description="The whole new payload (or give patch)."
    )
    patch: JSON | None = strawberry.field(
        default=None, description="A JSON Merge Patch (RFC 7386) of the payload (or payload)."
    )
    idempotency_key: str | None = None


@strawberry.type
class AmendProposalPayload:
    proposal: Proposal
    revision: ProposalRevision
    replayed: bool


@strawberry.input
class AcceptAmendmentInput:
    proposal_id: strawberry.ID
    payload_digest: str = strawberry.field(description="The amended revision's digest.")
    idempotency_key: str | None = None


@strawberry.type
class AcceptAmendmentPayload:
    proposal: Proposal
    replayed: bool
