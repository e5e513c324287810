"""The ``AuditEvent`` type."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from signoff import models
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.node import Node


@strawberry.type(description="Who did what to which object, and when.")
class AuditEvent(Node):
    id: strawberry.ID
    action: str
    target_type: str
    target_id: strawberry.ID
    details: JSON
    created_at: datetime
    actor_id: strawberry.Private[str | None]

    @strawberry.field(description="Null for the system itself (CLI, sweeps).")
    async def actor(self, info: strawberry.Info) -> Actor | None:
        return await load_actor(info, self.actor_id)

    @classmethod
    def from_model(cls, event: models.AuditEvent) -> AuditEvent:
        return cls(
            id=strawberry.ID(event.id),
            action=event.action,
            target_type=event.target_type,
            target_id=strawberry.ID(event.target_id),
            details=JSON(event.details),
            created_at=event.created_at,
            actor_id=event.actor_id,
        )
