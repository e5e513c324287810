"""Approval links in GraphQL."""

from __future__ import annotations

from datetime import datetime

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.schema.node import Node


@strawberry.input
class CreateApprovalLinkInput:
    task_id: strawberry.ID
    reviewer_id: strawberry.ID
    ttl_seconds: int | None = strawberry.field(
        default=None, description="60 s to 72 h (default 24 h); never past the deadline."
    )


@strawberry.input
class RevokeApprovalLinkInput:
    link_id: strawberry.ID


@strawberry.type(description="A single-use link for one reviewer to decide one digest.")
class ApprovalLink(Node):
    id: strawberry.ID
    state: models.ApprovalLinkState
    payload_digest: str
    expires_at: datetime
    used_at: datetime | None

    @classmethod
    def from_model(cls, link: models.ApprovalLink) -> ApprovalLink:
        return cls(
            id=strawberry.ID(link.id),
            state=models.ApprovalLinkState(link.state),
            payload_digest=link.payload_digest,
            expires_at=link.expires_at,
            used_at=link.used_at,
        )


@strawberry.type
class CreateApprovalLinkPayload:
    link: ApprovalLink
    path: str = strawberry.field(
        description="/links/<token> on this server: send it to the reviewer. Shown only here."
    )
