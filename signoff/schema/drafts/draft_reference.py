"""The ``DraftReference`` type: a draft without its values, as ``draftReferences`` lists it."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.resolvers.drafts.reads import DraftReference as DraftReferenceRow


@strawberry.type(
    description=(
        "A draft without its values, so a long session lists cheaply; read the draft "
        "itself with `draft(id, sessionId)` or `node(id)`: `id` is the draft's own."
    )
)
class DraftReference:
    id: strawberry.ID
    status: models.DraftStatus
    owner_kind: models.OwnerKind
    owner: JSON = strawberry.field(description="What it creates; `kind` as in `ownerKind`.")
    revision: int
    expires_at: datetime
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, r: DraftReferenceRow) -> DraftReference:
        return cls(
            id=strawberry.ID(r.id),
            status=r.status,
            owner_kind=r.owner_kind,
            owner=JSON(r.owner),
            revision=r.revision,
            expires_at=r.expires_at,
            created_at=r.created_at,
            updated_at=r.updated_at,
        )
