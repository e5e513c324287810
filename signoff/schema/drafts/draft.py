"""Drafts in GraphQL: the ``Draft`` type, and the inputs and payloads of its mutations."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.schema.node import Node


@strawberry.type(description="The reservation: the one operation key, for the reviewed values.")
class Reservation:
    operation_key: str
    values_digest: str


@strawberry.type(
    description=(
        "What an agent prepared for a person: edited by both, reserved by the person, "
        "dispatched once by the executor."
    )
)
class Draft(Node):
    id: strawberry.ID
    status: models.DraftStatus
    revision: int = strawberry.field(description="Send it back as expectedRevision.")
    values: JSON | None = strawberry.field(description="Null once retention dropped them.")
    values_digest: str | None = strawberry.field(
        description="sha256 of the canonical JSON of the values: what reserveDraft names."
    )
    updated_by_user: list[str] = strawberry.field(
        description="Fields the person edited: an agent's patch never overwrites them."
    )
    owner: JSON = strawberry.field(
        description="What it creates; `kind` FORM, APPROVAL or REFERENCE."
    )
    session_id: str
    account_id: strawberry.ID
    expires_at: datetime
    cancel_reason: models.CancelReason | None
    reservation: Reservation | None
    receipt: JSON | None
    owner_execution_ref: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_model(cls, d: models.Draft) -> Draft:
        reservation = (
            None
            if d.operation_key is None or d.reserved_digest is None
            else Reservation(operation_key=d.operation_key, values_digest=d.reserved_digest)
        )
        return cls(
            id=strawberry.ID(d.id),
            status=models.DraftStatus(d.status),
            revision=d.revision,
            values=None if d.values is None else JSON(d.values),
            values_digest=d.values_digest,
            updated_by_user=list(d.updated_by_user),
            owner=JSON(d.owner),
            session_id=d.session_id,
            account_id=strawberry.ID(d.account_id),
            expires_at=d.expires_at,
            cancel_reason=None if d.cancel_reason is None else models.CancelReason(d.cancel_reason),
            reservation=reservation,
            receipt=None if d.receipt is None else JSON(d.receipt),
            owner_execution_ref=d.owner_execution_ref,
            created_at=d.created_at,
            updated_at=d.updated_at,
        )


@strawberry.input
class PrepareDraftInput:
    request_id: str = strawberry.field(description="The same id with the same input replays.")
    session_id: str
    account_id: strawberry.ID = strawberry.field(description="The person the draft is for.")
    owner: JSON
    values: JSON | None = None


@strawberry.input
class UpdateDraftInput:
    request_id: str
    draft_id: strawberry.ID
    session_id: str
    expected_revision: int
    source: models.DraftSource
    patch: JSON | None = None
    remove: list[str] | None = None


@strawberry.input
class CancelDraftInput:
    request_id: str
    draft_id: strawberry.ID
    session_id: str
    expected_revision: int


@strawberry.input
class ReserveDraftInput:
    request_id: str
    draft_id: strawberry.ID
    session_id: str
    expected_revision: int
    values_digest: str = strawberry.field(description="The digest of the values reviewed.")


@strawberry.input
class CheckDraftDispatchInput:
    owner: JSON
    draft_id: strawberry.ID | None = strawberry.field(
        default=None, description="Without it, the check is the ordinary form's."
    )
    operation_key: str | None = None
    values_digest: str | None = None


@strawberry.input
class ObserveDraftInput:
    request_id: str
    draft_id: strawberry.ID
    session_id: str
    expected_revision: int
    operation_key: str
    outcome: models.DraftOutcome
    receipt: JSON | None = None
    owner_execution_ref: str | None = None


@strawberry.type
class DraftPayload:
    draft: Draft
    replayed: bool


@strawberry.type
class DraftDispatchCheck:
    allowed: bool
    managed: bool = strawberry.field(
        description="True when a reviewed draft made the check; false for the ordinary form."
    )
